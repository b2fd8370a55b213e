"""What a question asks for, and the spans of a sentence that answer it (spans.py): no model involved."""

import pytest

from infinipot_cli.answer import spans


@pytest.mark.parametrize("question,head,first", [
    ("Which short option filters the archive through xz?", "option", "option"),
    ("Which exit code does tar use for a fatal, unrecoverable error?", "code", "number"),
    ("What is gzip's default compression level?", "level", "number"),
    ("What is the default value of raiseExceptions?", "value", "number"),
    ("Which environment variable can hold the daemon password?", "variable", "quoted"),
    ("Which CVE did gzip 1.12-1 address?", None, None),
    ("In which release did the numfmt program first appear?", "release", "version"),
    ("When was coreutils 9.1 released?", "date", "date"),
    ("How many packages does the main archive contain?", "number", "number"),
    ("Who uploaded gzip 1.12-1?", "owner", "name"),
    ("Where does 'make install' put bash?", "location", "path"),
    ("To which email address can bug reports be mailed?", "address", "email"),  # the compound's head
    ("Which error does g_key_file_load_from_file() return when the file does not exist?", "error", "quoted"),
    ("Since when has the option been deprecated?", "date", "date"),
])
def test_the_question_names_what_answers_it(question, head, first):
    want = spans.wanted(question)
    assert want.head == head and (want.kinds[0] if want.kinds else None) == first, want


@pytest.mark.parametrize("question", [
    "What does rsync's exit code 23 mean?",          # a description, not a code
    "What should logging._srcfile be set to to avoid calling sys._getframe()?",
])
def test_questions_that_do_not_name_a_kind(question):
    assert not spans.wanted(question).typed


def test_short_and_long_options():
    line = " -J, --xz\n              Filter the archive through xz(1).\n"
    short = spans.spans(line, spans.wanted("Which short option filters the archive through xz?"),
                        "Which short option filters the archive through xz?")
    assert short[0].text == "-J"
    q = "Which long option filters the archive through xz?"
    assert spans.spans(line, spans.wanted(q), q)[0].text == "--xz"


def test_spans_of_each_kind():
    def best(sentence, question):
        got = spans.spans(sentence, spans.wanted(question), question)
        return got[0].text if got else None

    assert best("If a warning occurs, exit status is 2.", "What exit status does gzip return on a warning?") == "2"
    assert best("This is version 0.21 of the specification.", "Which version of the specification is this?") == "0.21"
    assert best("coreutils 9.1 was released on 2022-04-15.", "When was coreutils 9.1 released?") == "2022-04-15"
    assert best("You can avoid the prompt by setting the environment variable RSYNC_PASSWORD to the password.",
                "Which environment variable can hold the daemon password?") == "RSYNC_PASSWORD"
    assert best("The update-passwd tool keeps the entries in sync.", "Which tool keeps the entries in sync?") \
        == "update-passwd"
    assert best("For example, squid runs as user proxy.", "As which user does squid run?") is None  # no kind: the model says it
    assert best("press CTRL-R (redo) to reverse the preceding command", "Which key redoes a change?") == "CTRL-R"
    assert best("Send suggestions to bug-bash@gnu.org please.", "To which email address can bugs be mailed?") \
        == "bug-bash@gnu.org"


def test_what_the_question_names_is_not_its_answer():
    q = "Which option does --archive stand for?"
    assert all(s.text != "--archive" for s in spans.spans("--archive, -a  archive mode", spans.wanted(q), q))


def test_headings_and_placeholders_are_not_answers():
    q = "Which exit code does tar use for a fatal error?"
    assert spans.spans("RETURN VALUE\n", spans.wanted(q), q) == []
    q = "How many deletions does --max-delete=NUM allow?"
    assert spans.spans("--max-delete=NUM  don't delete more than NUM files", spans.wanted(q), q) == []


def test_contains_matches_whole_words():
    assert spans.contains("use -c to create", "-c") and not spans.contains("use --create", "-c")
    assert spans.contains("the proxy user.", "proxy") and not spans.contains("proxying", "proxy")


def test_a_numeric_question_wants_a_number():
    q = "What is the numeric value of ASN1_MAX_NAME_SIZE?"
    assert spans.wanted(q).kinds == ("number",)
    assert spans.spans("The ?LAST name indicates the last element of a SET OF.", spans.wanted(q), q) == []


def test_a_question_asks_for_several_things_only_by_its_form():
    for q in ["What are all the special magic numbers for x?", "List the options of tar.", "Which options are deprecated?",
              "What files are read at startup?", "Name every exit code."]:
        assert spans.wanted(q).many, q
    for q in ["Which command quits Vim and throws away all changes?", "Which shell option makes ** match all files?",
              "What is the default list separator?", "How do I start R, ignoring every profile?"]:
        assert not spans.wanted(q).many, q


def test_a_command_line_shown_answers_which_command():
    text = ("Bisect reset\n    After a bisect session, to clean up the bisection state and return to the original HEAD,"
            " issue the following command:\n\n        $ git bisect reset\n")
    q = "Which command ends a bisect session and returns to the original branch?"
    best = spans.spans(text, spans.wanted(q), q)[0]
    assert (best.text, best.kind) == ("git bisect reset", "shell")
    assert [s.text for s in spans.spans("    $ git bisect bad        # Current version is bad\n",
                                        spans.wanted("Which command marks a version as bad?"))] == ["git bisect bad"]


def test_a_path_at_the_end_of_a_sentence_leaves_its_full_stop():
    q = "Which directory holds public Python 3 modules?"
    s = "Public Python 3 modules must be installed in the directory /usr/lib/python3/dist-packages."
    assert [x.text for x in spans.spans(s, spans.wanted(q), q)] == ["/usr/lib/python3/dist-packages"]


def test_a_capitalised_compound_opening_a_sentence_is_no_identifier():
    q = "Where must public Python 3 modules be installed?"
    s = "Architecture-independent public Python 3 modules must be installed to /usr/lib/python3/dist-packages."
    assert [x.text for x in spans.spans(s, spans.wanted(q), q)] == ["/usr/lib/python3/dist-packages"]
    q2 = "Which account runs the mail transport agent?"
    assert "update-passwd" in [x.text for x in spans.spans("It is kept by update-passwd here.", spans.wanted(q2), q2)]


def _texts(sentence, question):
    return [s.text for s in spans.spans(sentence, spans.wanted(question), question)]


def test_a_piece_of_what_the_question_names_is_not_its_answer():
    q = "Which Debian revision fixed CVE-2010-0001?"
    got = _texts("gzip (1.3.12-9) unstable; * fix applied for CVE-2010-0001 which identified an underflow", q)
    assert got[0] == "1.3.12-9" and "2010" not in got and "0001" not in got


def test_markup_and_preprocessor_words_are_not_answers():
    q = "From which directory are static files served?"
    assert "/dd" not in _texts("</dd> <dt>static</dt> <dd>Whether to serve static files.</dd>", q)
    q = "Which constant names the main group of a key file?"
    got = _texts('#define G_KEY_FILE_DESKTOP_GROUP "Desktop Entry"', q)
    assert "#define" not in got and "G_KEY_FILE_DESKTOP_GROUP" in got


def test_a_character_is_a_symbol_not_a_word():
    q = "Which character starts a comment in Vim9 script?"
    assert spans.wanted(q).kinds == ("quoted", "symbol")
    assert _texts("everything after # until the end-of-line is a comment.", q) == ["#"]
    assert _texts("The default escape character is \u2018~\u2019.", "What is ssh's default escape character?") == ["~"]
    assert _texts("Strings can be concatenated with .. in Vim9.", "Which operator concatenates strings?") == [".."]
    q = "What prefix starts an octal number in Vim9 script?"  # a prefix is no symbol: "0o"
    assert _texts('An octal number starts with "0o", "0O".', q)[0] == "0o"


def test_how_do_i_asks_for_a_command_a_key_or_an_option():
    q = "How can I make an interactive bash use a different startup file than its bashrc?"
    assert spans.wanted(q).kinds == ("shell", "key", "option")
    assert _texts("--rcfile file  Execute commands from file instead of the standard personal "
                  "initialization file ~/.bashrc if the shell is interactive", q)[0] == "--rcfile"
    assert spans.wanted("How do I undo an undo in Vim?").typed
    assert not spans.wanted("How does the pot keep its memory fixed?").typed  # how it works: no span


def test_an_optional_argument_of_a_synopsis_is_not_what_the_line_is_about():
    q = "Which tar option creates a new archive?"
    assert _texts(" tar --create [--file ARCHIVE] [OPTIONS] [FILE...]\n", q) == ["--create"]
    q = "Which option shows the help?"  # a usage line of bracketed options alone keeps them
    assert _texts("usage: prog [-h] [--verbose]\n", q) == ["-h", "--verbose"]


def test_a_version_ending_a_sentence_is_a_version():
    want = spans.wanted("In which release did the change appear?")
    got = [s.text for s in spans.spans("The first stable release containing this change was 5.92.", want)]
    assert got[:1] == ["5.92"]
    assert spans.mentions("Upgrade from 1.2.3 to 1.3.", "version") == ["1.2.3", "1.3"]  # never a piece of 1.2.3


@pytest.mark.parametrize("sentence,time", [
    ("The ferry leaves at 7:45 from pier 3.", "7:45"),
    ("Boarding closes at 19:30 sharp.", "19:30"),
    ("The last boat leaves at 7:45 pm on weekdays.", "7:45 pm"),
    ("The log says the boat left at 07:45:10 today.", "07:45:10"),
    ("Doors open at 9 a.m. daily.", "9 a.m."),
])
def test_a_time_of_day_is_one_span(sentence, time):
    for q in ("When does the boat leave?", "At what time does the boat leave?", "What time do the doors open?"):
        want = spans.wanted(q)
        assert "time" in want.kinds[:2], want
        got = spans.spans(sentence, want, q)
        assert time in [s.text for s in got if s.kind == "time"], got
        # no piece of the time stands as a number of its own ("7" of "7:45")
        assert not [s for s in got if s.kind == "number" and sentence.find(time) <= s.start < sentence.find(time) + len(time)]
    assert spans.wanted("What time does the boat leave?").kinds[0] == "time"


def test_a_number_question_takes_no_piece_of_a_time():
    q = "How many boats leave from pier 3?"
    assert [s.text for s in spans.spans("2 boats leave at 7:45 from pier 3.", spans.wanted(q), q)] == ["2"]


MANPAGE = ("       -w[EXT], --write-back[=EXT]\n", "       -l N, --line-width=N\n", "       --hue[=WHEN]\n",
           "       -R rules-file, --rules-file=rules-file\n", "       -q, --hush, --mute\n")


@pytest.mark.parametrize("line,options", list(zip(MANPAGE, (["-w", "--write-back"], ["-l", "--line-width"], ["--hue"],
                                                           ["-R", "--rules-file"], ["-q", "--hush", "--mute"]))))
def test_gnu_option_syntax_is_read_as_options(line, options):
    q = "Which option does it?"
    assert sorted(s.text for s in spans.spans(line, spans.wanted(q), q)) == sorted(options)
    assert [o for o in spans.mentions(line, "option")] == options
    assert all(spans.leads(line, line.index(o)) for o in options)  # each heads its line: the line defines it


def test_an_option_mentioned_in_passing_does_not_lead_and_weighs_less():
    line = "       It applies the rules given with -r or --rules-file, see -X.\n"
    assert not any(spans.leads(line, line.index(o)) for o in ("-r", "--rules-file", "-X"))
    q = "Which option applies the rules?"
    got = spans.spans("  -X, --extended  apply the extended rules; see -r\n", spans.wanted(q), q)
    assert got[0].text in ("-X", "--extended") and got[-1].text == "-r", got
    # a literal value in running text is kept with its option: "--format=posix" is not a placeholder
    assert spans.mentions("use --format=posix for old readers", "option") == ["--format=posix"]


def test_a_heading_option_counts_the_words_of_its_description_below_it():
    q = "Which option makes frob rewrite ledger files in place?"
    want = spans.wanted(q)
    alone = spans.spans(MANPAGE[0], want, q)
    described = spans.spans(MANPAGE[0], want, q, after="\n              rewrite ledger files in place\n")
    assert described[0].score > alone[0].score + 1


@pytest.mark.parametrize("question,head,first", [
    ("What license version is this?", "version", "version"),       # a compound: its last noun is the head
    ("What is the notice period for terminating the licence?", "period", "number"),
    ("Which exit code does frob use on a bad rule?", "code", "number"),
    ("Which short option filters the ledger?", "option", "option"),
])
def test_the_head_of_a_compound_names_what_answers_it(question, head, first):
    want = spans.wanted(question)
    assert (want.head, want.kinds[0]) == (head, first), want


def test_a_version_a_title_calls_one():
    q = "What license version is this?"
    want = spans.wanted(q)
    for title in ("FROBNITZ OPEN LICENSE\n   Version 3, 29 June 2007\n", "FROBNITZ OPEN LICENSE VERSION 3\n"):
        got = spans.spans(title, want, q)
        assert got and (got[0].text, got[0].kind) == ("3", "version"), got
    # a heading line gives no word spans still
    assert spans.spans("RETURN VALUE\n", spans.wanted("Which value does it return?"), "Which value does it return?") == []


def test_when_after_a_wh_word_is_a_clause_not_a_date_question():
    assert not spans.wanted("What happens when a group holds the same key twice?").typed
    assert spans.wanted("Since when has the option been deprecated?").kinds[0] == "date"


def test_a_numbers_unit_the_question_asks_for_counts_and_justified_spacing_keeps_it():
    # a man page justifies its lines with runs of spaces; "2048 bytes" holds the unit asked for ("How many bytes")
    q = "How many bytes of headroom are subtracted when the largest allowed command line is calculated?"
    want = spans.wanted(q)
    cut = " exec, less the size of your environment, less 2048 bytes  of\n              headroom.  "
    aside = "1KiB  is  1024  bytes.  "
    best = spans.spans(cut, want, q)[0]
    other = spans.spans(aside, want, q)[0]
    assert best.text == "2048 bytes" and other.text == "1024 bytes"
    assert best.score > other.score


@pytest.mark.parametrize("sentence", [
    "covering the following alerts: CVE-2006-4334 CVE-2006-4335",   # pieces of an identifier
    "Text is read as utf-8 on x86-64 machines.",
    "For full details see ssh_config(5).",                           # a manual's section
    "*10.4*\tThe global command",                                    # a section's number before its title
    "4.6 The 5.x Releases",
])
def test_a_number_that_names_is_no_count(sentence):
    q = "How many times does it retry?"
    assert [s.text for s in spans.spans(sentence, spans.wanted(q), q)] == []


def test_counts_beside_names_are_still_counts():
    q = "How many seconds does it wait?"
    want = spans.wanted(q)
    got = lambda s: [x.text for x in spans.spans(s, want, q)]  # noqa: E731
    assert got("2      Fatal error.") == ["2"]          # an exit status defined at the head of its line
    assert got("a 30-second timeout") == ["30"]
    assert got("the level N-1 dump") == ["1"]           # arithmetic, not an identifier's piece
    assert got("Fixed (CVE-2006-4334) after 3 seconds") == ["3 seconds"]


def test_a_hyphenated_phrase_is_no_identifier():
    q = "Which command quits Vim and throws away all changes?"
    want = spans.wanted(q)
    got = lambda s: [x.text for x in spans.spans(s, want, q)]  # noqa: E731
    assert got("Vim has a quit-and-throw-things-away command.") == []
    assert got("Run apt-get or ssh-keygen first.") == ["apt-get", "ssh-keygen"]
