"""Answering from the document's passages (answering.py, retrieve.py): the model's answer checked against them."""


import pytest

from infinipot_cli.answer import answering, quotes, retrieve, spans


def found(texts, top, score=1.0):
    return retrieve.Found(0, 0, [u for u in (top - 1, top, top + 1) if 0 <= u < len(texts)], top, score)


MAN = ["OPTIONS\n", " -j, --bzip2\n    Filter the archive through bzip2(1).\n",
       " -J, --xz\n    Filter the archive through xz(1).\n", " --lzip Filter the archive through lzip(1).\n"]


def test_a_span_replaces_an_answer_that_misses_it():
    q = "Which short option filters the archive through xz?"
    how, short, unit, _ = answering.decide(q, "The document asks to filter the archive through xz.", [found(MAN, 2)], MAN)
    assert (how, short, unit) == ("extracted", "-J", 2)


def test_the_models_answer_stands_when_it_names_the_passages_span():
    q = "Which short option filters the archive through xz?"
    how, short, _, _ = answering.decide(q, "The option -J filters the archive through xz.", [found(MAN, 2)], MAN)
    assert how == "written" and short.startswith("The option -J")


def test_the_wrong_one_of_two_options_is_replaced():
    q = "Which short option filters the archive through xz?"
    how, short, _, _ = answering.decide(q, "Use -j to filter the archive through xz.", [found(MAN, 2)], MAN)
    assert (how, short) == ("extracted", "-J")


def test_a_non_answer_is_replaced_by_the_passage_sentence():
    texts = ["Intro.\n", "The keeper's cat was named Biscuit.\n", "She was ginger.\n"]
    q = "What was the keeper's cat called?"  # names no kind of span: the sentence is quoted
    how, short, unit, _ = answering.decide(q, "The document above contains the answer to the question.",
                                           [found(texts, 1)], texts)
    assert (how, unit) == ("quoted", 1) and "Biscuit" in short
    assert answering.non_answer("The document above contains the answer to the question.", q)
    assert not answering.non_answer("The cat was called Biscuit.", q)


def test_an_untyped_answer_in_the_passages_words_stands():
    texts = ["Intro.\n", "For example, group proxy is used by pdnsd, and squid runs as user proxy.\n", "\n"]
    q = "As which user does squid run?"
    how, short, _, _ = answering.decide(q, "Squid runs as the proxy user.", [found(texts, 1)], texts)
    assert how == "written"


def test_an_answer_naming_what_its_passages_lack_is_withheld():
    texts = ["Intro.\n", "ASN1_MAX_NAME_SIZE is the maximum number of characters of an identifier.\n", "\n"]
    q = "What is the numeric value of ASN1_MAX_NAME_SIZE?"
    how, short, _, bad = answering.decide(q, "The numeric value of ASN1_MAX_NAME_SIZE is 64.", [found(texts, 1)], texts)
    assert how == "not-said" and bad == ["64"]
    how, *_ = answering.decide(q, "The document does not say.", [found(texts, 1)], texts)
    assert how == "not-said"


def test_a_description_asked_for_is_quoted_when_the_answer_invents_one():
    texts = ["EXIT VALUES\n", "     o 23 - Partial transfer due to error\n", "     o 24 - Partial transfer due to vanished source files\n"]
    q = "What does rsync's exit code 23 mean?"  # a description, not a value: the passage's sentence, quoted
    how, short, unit, bad = answering.decide(q, "Exit code 23 means that the rsync server was unable to connect "
                                             "to port 8873.", [found(texts, 1)], texts)
    assert (how, unit) == ("quoted", 1) and "Partial transfer" in short and bad == ["8873"]
    q = "What is the numeric value of the transfer timeout?"  # a value the passage lacks: not answered
    how, *_ = answering.decide(q, "The transfer timeout is 8873.", [found(texts, 1)], texts)
    assert how == "not-said"


def test_the_answer_line_quotes_the_document():
    line = quotes.quote_line("-J", "extracted", " -J, --xz\n  Filter the archive through xz(1).\n",
                                "tar.1.txt · line 612")
    assert line == "-J \u2014 \u201c-J, --xz Filter the archive through xz(1).\u201d [tar.1.txt · line 612]"
    assert quotes.quote_line("s", "quoted", "A sentence.", "").startswith("\u201cA sentence.")


def test_an_answer_about_the_document_is_no_answer():
    q = "What does asn1_check_version return if the library is too old?"
    assert answering.non_answer("The document provides a detailed description of the asn1_check_version function.", q)
    assert answering.non_answer("The document mentions that the document was uploaded by a user.", q)
    assert answering.non_answer("Question: What does asn1_check_version return?", q)
    assert not answering.non_answer("The document states that it returns NULL.", q)


def test_a_quote_is_the_whole_sentence():
    texts = ["First sentence.\n", "Anybody can use the library under the\n", "GNU Lesser General Public License.\n",
             "Next one.\n"]
    assert answering.sentence_units(texts, 1) == (1, 2)
    assert answering.sentence_units(texts, 2) == (1, 2)
    assert answering.sentence_units(MAN, 2) == (2, 2)  # a line with its description is one unit already


def test_an_identifier_cut_short_is_written_whole():
    uuid = "79fd3d1d-681e-4af2-b209-9f3a51745e1f"
    text = f"One of the special magic uuids for 4cb55334-a545 is: {uuid}."
    assert answering.completed("79fd3d1d-6.", text) == f"{uuid}."
    assert answering.completed("Use --conf-d here.", "Use --conf-dir DIR.") == "Use --conf-dir here."
    # a whole token of the passage, a plain word, or a head shared by two identifiers stays as written
    assert answering.completed("uid 37", "uid 37 and 371") == "uid 37"
    assert answering.completed("The answer is config.", "configuration") == "The answer is config."
    assert answering.completed("79fd3d1d-6", f"{uuid} 79fd3d1d-6aaa") == "79fd3d1d-6"


def test_a_long_sentence_is_clipped_around_its_span_on_the_answer_line():
    words = [f"w{i}" for i in range(100)]
    line = quotes.quote_line("w70", "extracted", " ".join(words), "a.pdf · p. 3")
    assert line.startswith("w70 \u2014 \u201c\u2026 ") and line.endswith(" \u2026\u201d [a.pdf · p. 3]")
    shown = line.split("\u201c", 1)[1].split("\u201d")[0].replace("\u2026", "").split()
    assert len(shown) == quotes.QUOTE_WORDS and "w70" in shown and shown.index("w70") == quotes.QUOTE_WORDS // 3
    assert quotes.clip_around("a short sentence.", "short") == "a short sentence."
    assert quotes.clip_around(" ".join(words)).startswith("w0 ")  # no span: its head


def test_a_passage_does_not_end_inside_a_word_a_long_sentence_was_cut_at():
    texts = ["Other text.\n", "One of the special magic uuids for 4cb55334-a545-4f42-", "92ff-df69b00f7e6d is: 79fd3d1d-6",
             "81e-4af2-b209-9f3a51745e1f.\n", "More text.\n", "And more.\n"]
    assert retrieve._cut_inside(texts[1], texts[2]) and retrieve._cut_inside(texts[2], texts[3])
    assert not retrieve._cut_inside(texts[0], texts[1]) and not retrieve._cut_inside(texts[3], texts[4])
    # the top unit with the units it was cut from (1..3), then one unit with text on each side
    assert retrieve.core_units([0, 1, 2, 3, 4, 5], (1, 3), texts) == [0, 1, 2, 3, 4]
    assert answering._text({1, 2, 3}, texts).endswith("is: 79fd3d1d-681e-4af2-b209-9f3a51745e1f.\n")
    assert answering._text({0, 4}, texts) == "Other text.\n More text.\n"


def test_a_list_question_lists_the_value_of_each_passage_the_model_missed():
    texts = ["Some special magic numbers are hidden in the text.\n"] + [
        f" One of the special magic numbers for alcoholic-dare is: {n}.\n" for n in (3219037, 4400417, 4731444)]
    found = [retrieve.Found(0, 0, [u], u, s) for u, s in ((1, 17.1), (2, 17.1), (3, 17.1), (0, 9.8))]
    q = "What are all the special magic numbers for alcoholic-dare mentioned in the provided text?"
    assert answering.listed(q, found, texts) == ["3219037", "4400417", "4731444"]
    how, short, _, _ = answering.several(q, "3219037, 4731444, 3219037", found, texts)
    assert (how, short) == ("extracted", "3219037, 4400417, 4731444")
    # the model's list naming every one of them stands
    assert answering.several(q, "- 3219037\n- 4400417\n- 4731444", found, texts)[0] == "written"
    # no typed span in the best passage: the list is the model's
    assert answering.listed(q, found[3:] + found[:3], texts) == []


def test_a_list_whose_items_are_dropped_for_invented_words_gives_way_to_the_passages_values():
    texts = [f" One of the special magic numbers for {k} is: {n}.\n" for k, n in
             (("condemned-training", 7769142), ("rich-comradeship", 6579538), ("direful-mint", 1750521))]
    found = [retrieve.Found(0, 0, [u], u, 17.0) for u in range(3)]
    q = "What are all the special magic numbers for condemned-training, rich-comradeship and direful-mint?"
    written = "1. 7769142 (Lemonade)\n2. 6579538 (Lemon)\n3. 1750521 (Direful-Mint)"
    assert answering.several(q, written, found, texts)[:2] == ("extracted", "7769142, 6579538, 1750521")


def test_the_line_a_colon_leads_into_counts_as_the_top_sentence():
    texts = ["Bisect reset\n", "After a bisect session, issue the following command:\n", "\n", "    $ git bisect reset\n",
             "Bisect skip\n"]
    weights = dict((u, w) for w, u in answering._sentences([retrieve.Found(0, 0, [0, 1, 2, 3, 4], 1, 9.0)], texts))
    assert weights[1] == weights[3] == 1.0 and weights[0] == weights[4] == 0.5
    texts[1] = "After a bisect session, issue the following command.\n"  # no colon: a neighbour like the others
    weights = dict((u, w) for w, u in answering._sentences([retrieve.Found(0, 0, [0, 1, 2, 3, 4], 1, 9.0)], texts))
    assert weights[3] == 0.5


def test_a_command_line_shown_replaces_an_answer_naming_none():
    texts = ["Bisect skip\n", "You can ask Git to do it for you by issuing the command:\n",
             "\n    $ git bisect skip                 # Current version cannot be tested\n"]
    q = "How do you tell git bisect that the current version cannot be tested?"
    written = "You can tell git bisect that the current version cannot be tested by asking it to bisect."
    how, short, unit, _ = answering.decide(q, written, [found(texts, 2)], texts)
    assert (how, short, unit) == ("extracted", "git bisect skip", 2)


def test_a_quoted_sentence_ending_in_a_colon_comes_with_what_it_leads_into():
    texts = ["Halting\n", "To immediately stop a request within a filter or route use:\n", "\n", "halt\n", "\n",
             "You can also specify the status when halting.\n"]
    assert quotes.led_into(texts, 1) == 3
    assert quotes.led_into(texts, 5) == 5  # a sentence that ends otherwise is quoted alone


def test_a_term_of_symbols_is_quoted_with_its_description():
    texts = ["     ~B      Send a BREAK to the remote system.\n\n", "    ", " ~.     ", " Disconnect.\n\n", " ~&  Background.\n"]
    assert answering.sentence_units(texts, 3) == (2, 3)  # "~.  Disconnect.", not "Disconnect." alone


def test_a_question_about_a_version_option_or_identifier_the_document_lacks_is_not_answered():
    doc = "Noteworthy changes in release 9.1 (2022-04-15). g_key_file_to_data () outputs key_file. -n  Redirect stdin."
    assert answering.absent("On what date was coreutils 9.2 released?", doc) == ["9.2"]
    assert answering.absent("What does ssh -N do?", doc) == ["-N"]  # options are case-sensitive
    assert answering.absent("What is the value of ASN1_MAX_NAME_SIZE?", doc) == ["ASN1_MAX_NAME_SIZE"]
    # named as the document names them, "()" aside; words that are no identifier are never refused for
    assert answering.absent("What does g_key_file_to_data() do?", doc) == []
    assert answering.absent("What does -n do in release 9.1?", doc) == []
    assert answering.absent("Which command starts the GUI Vim on a single-line prompt?", doc) == []
    assert answering.absent("When was 9.2 released?", None) == []  # the document not held whole: no check


R_GRAPHICS = ["locator(n, type) Wait for the user to select locations on the current plot using the left mouse "
              "button.\n",
              "locator() returns the locations of the points selected as a list with two components x and y.\n",
              "This continues until n (default 512) points have been selected, or another mouse button is pressed.\n",
              "Use identify() to highlight any of the points defined by x and y.\n",
              "Chapter 13 lists 4 ways to draw points, and none of them waits.\n"]


def test_units_next_to_the_kind_of_thing_asked_for_rank_higher():
    q = "How many points does locator() wait for by default?"
    plain = retrieve.ev.word_scores(R_GRAPHICS, q)
    typed = retrieve.rank(R_GRAPHICS, q)
    assert int(plain.argmax()) != 2 and int(typed.argmax()) == 2  # "n (default 512) points" over the prose
    assert typed[2] == plain[2] * (1 + retrieve.TYPED_WEIGHT)
    assert typed[1] > plain[1]   # next to the number: the neighbour of a definition counts
    # a question asking for no kind a text shows by its form ranks by its words alone
    q2 = "Which function highlights the points?"
    assert retrieve.rank(R_GRAPHICS, q2).tolist() == retrieve.ev.word_scores(R_GRAPHICS, q2).tolist()


def test_a_number_the_question_names_does_not_type_a_unit():
    texts = ["Release 9.2 added the foo program.\n", "\n", "\n", "The foo program was rewritten in release 9.3.\n"]
    q = "Which release after 9.2 rewrote the foo program?"
    w = retrieve.ev.word_scores(texts, q)
    got = retrieve.typed(w, texts, q)
    assert got[0] == w[0] and got[3] == w[3] * (1 + retrieve.TYPED_WEIGHT)


ARGPARSE = ["Some command-line arguments should be selected from a restricted set of values.\n",
            "These can be handled by passing a sequence object as the choices keyword argument to add_argument().\n",
            "When the command line is parsed, argument values will be checked.\n"]


def test_an_answer_that_strays_from_its_passage_gives_way_to_its_sentence():
    q = "How do you restrict an argument to a fixed set of allowed values?"
    strays = "To restrict an argument to a fixed set of allowed values, you can use the `with-statement` in Python."
    assert answering.support(strays, q, "".join(ARGPARSE)) < answering.SUPPORTED
    how, short, unit, _ = answering.decide(q, strays, [found(ARGPARSE, 1)], ARGPARSE)
    assert (how, unit) == ("quoted", 1) and "choices" in short
    keeps = "Pass a sequence object as the choices keyword argument to add_argument()."
    assert answering.support(keeps, q, "".join(ARGPARSE)) >= answering.SUPPORTED  # "pass" is not "passing"
    assert answering.decide(q, keeps, [found(ARGPARSE, 1)], ARGPARSE)[:2] == ("written", keeps)
    listed = "- choices\n- sets\n- values of a fixed kind"  # a list's items are judged as items, not as a sentence
    assert answering.decide(q, listed, [found(ARGPARSE, 1)], ARGPARSE)[0] == "written"


SSH = ["     -n      Redirects stdin from /dev/null.\n", "     -N      Do not execute a remote command.\n",
       "     -f      Go to background just before command execution.  Implies -n.\n",
       "     -W host:port  Requests that standard input and output be forwarded.  Implies -N, -T.\n"]


def test_an_option_the_question_names_is_matched_as_written_and_where_it_heads_a_line():
    got = retrieve.rank(SSH, "What does ssh -N do?")
    assert int(got.argmax()) == 1         # its definition: "-N" heads the line
    assert got[0] == 0 and got[2] == 0    # -n is another option
    assert got[3] > 0                     # a mention counts, less
    assert retrieve.heads(SSH, "What does ssh -N do?").nonzero().flatten().tolist() == [1]
    changes = ["gzip (1.3.12-8) unstable; urgency=low\n", "gzip (1.12-1) sid; urgency=high\n", "gzip (1.10-4) sid\n"]
    assert int(retrieve.rank(changes, "Who uploaded gzip 1.12-1?").argmax()) == 1  # a version, as written too
    api = ["g_key_file_to_data ()\n", "Outputs key_file as a string.\n", "See also g_key_file_to_data().\n"]
    assert retrieve.heads(api, "What does g_key_file_to_data() do?").nonzero().flatten().tolist() == [0]


API = ["g_key_file_to_data ()\n", "gchar *\n", "g_key_file_to_data (GKeyFile *key_file,\n", "    gsize *length,\n",
       "    GError **error);\n", "This function outputs key_file as a string.\n", "Note that it never fails.\n"]


def test_a_quoted_definition_head_gives_its_gloss():
    q = "What does g_key_file_to_data() do?"  # the head and its signature are no statement: the line under them is
    how, short, unit, _ = answering.decide(q, "The document above contains the answer to the question.",
                                           [found(API, 0)], API)
    assert (how, short, unit) == ("quoted", "This function outputs key_file as a string.", 5)
    q = "What does gchar mean?"  # a name the head does not begin with: the top sentence stays
    assert answering.decide(q, "The document above answers it.", [found(API, 0)], API)[2] == 0


def test_the_span_asked_for_stands_apart_from_a_claim_the_passage_lacks():
    texts = ["gzip (1.3.12-9) unstable; urgency=high\n", "  * Fix CVE-2010-0001: integer underflow in unlzw.\n",
             "  * Thanks to Jane Doe for 168 small patches over the years.\n"]
    q = "Which Debian revision fixed CVE-2010-0001?"
    how, short, unit, _ = answering.decide(q, 'The document says that "gzip (1.3.12-9)" was released on 2012-01-01.',
                                           [found(texts, 1)], texts)
    assert (how, short, unit) == ("extracted", "1.3.12-9", 0)   # the version stands, the invented date does not
    q = "How much disk space does the build need?"
    how, *_, bad = answering.decide(q, "The build needs 168 MB of disk space.", [found(texts, 1)], texts)
    assert how == "not-said" and bad == ["MB"]                 # "168 MB" is one claim, and not the passage's


def test_no_passage_found_is_no_answer_whatever_was_written():
    # the model wrote from no passage of the document: nothing it says is checked, so nothing it says is shown
    for written in ('The answer to the question is: "The document is not a helpful tool.', "The answer is 42."):
        assert answering.decide("What is the answer?", written, [], ["deep text: the answer is 42\n"])[0] == "not-said"
        assert answering.several("What are the answers?", written, [], ["x\n"])[0] == "not-said"


def test_a_preamble_does_not_hide_a_non_answer():
    q = "What is the answer?"
    assert answering.non_answer('The answer to the question is: "The answer to this question is: The document is not '
                                'a helpful tool.', q)
    assert answering.non_answer("Answer: the text describes a tool.", q)
    assert not answering.non_answer("The answer is 42.", q)
    assert not answering.non_answer("The answer to the question is: the cat was ginger.", q)


FERRY = ["Timetable\n", "The ferry leaves at 7:45 from pier 3.\n", "Tickets are sold on board.\n"]


def test_a_number_that_is_only_a_piece_of_a_time_gives_way_to_the_time():
    q = "When does the ferry leave?"
    for written in ("The ferry leaves at 7.", "It leaves at 7 from pier 3."):
        how, short, unit, _ = answering.decide(q, written, [found(FERRY, 1)], FERRY)
        assert (how, short, unit) == ("extracted", "7:45", 1), (written, how, short)
    assert answering.decide(q, "The ferry leaves at 7:45.", [found(FERRY, 1)], FERRY)[:2] == \
        ("written", "The ferry leaves at 7:45.")


# a made-up tool's man page, cut into units as a man page is read: lines, a description under its option line
FROB = ["OPTIONS\n       -q, --hush, --mute\n", "\n             ", " suppress the automatic echo of each rewritten record\n\n",
        "      ", " --follow-links\n              follow symbolic links when rewriting in place\n\n",
        "      ", " -w[EXT], --write-back[=EXT]\n", "\n             ",
        " rewrite ledger files in place (keeps a backup copy if EXT is given)\n\n",
        "      ", " -k, --keep-existing\n              do not replace a ledger file that already exists\n\n",
        "      ", " -X, --extended\n              use extended rule syntax in the rules (see -w)\n"]


@pytest.mark.parametrize("question,top,options", [
    ("Which option makes frob rewrite ledger files in place?", 8, ("-w", "--write-back")),
    ("Which option suppresses the automatic echo of rewritten records?", 2, ("-q", "--hush", "--mute")),
    ("Which option prevents replacing a ledger file that already exists?", 10, ("-k", "--keep-existing")),
])
def test_the_option_a_description_line_belongs_to_answers(question, top, options):
    f = retrieve.Found(0, 0, list(range(max(0, top - 4), min(len(FROB), top + 5))), top, 9.0)
    for written in ("Use --follow-links.", "Use the -X option.", "It is done by the frob tool."):
        how, short, unit, _ = answering.decide(question, written, [f], FROB)
        assert how == "extracted" and short in options, (written, how, short)
    assert answering._described(FROB, 6) == [7, 8] and answering._described(FROB, 8) == []


LICENSE = ["FROBNITZ OPEN LICENSE\n   Version 3, 29 June 2007\n", "\n",
           "Everyone may copy and share verbatim copies of this license document.\n",
           "A program may be combined with a work under the Frobnitz Affero License, version 2.\n",
           "This License does not grant permission to use the trade names or trademarks of the Licensor.\n"]


def test_a_license_version_comes_from_its_title():
    q = "What license version is this?"
    f = retrieve.Found(0, 0, [0, 1, 2], 0, 5.0)
    how, short, unit, _ = answering.decide(q, "It is the 3rd edition of the Frobnitz Affero License.", [f], LICENSE)
    assert (how, short, unit) == ("extracted", "3", 0)


@pytest.mark.parametrize("written", [
    "This License does not grant permission to use the trade names or trademarks of the Licensor.",  # copied
    "The document is about the Licensor's trade names.",                                              # a non-answer
    "The licensee has to wait before leaving the premises.",                                          # strays
])
def test_a_value_asked_for_is_not_answered_by_a_sentence_without_one(written):
    q = "What is the notice period for terminating the license?"
    f = retrieve.Found(0, 0, [3, 4], 4, 5.0)
    how, short, _, _ = answering.decide(q, written, [f], LICENSE)
    assert (how, short) == ("not-said", ""), (how, short)
    # a description question still gets the passage's sentence
    how, short, _, _ = answering.decide("What does the license say about trademarks?", "The document is about it.",
                                        [f], LICENSE)
    assert how == "quoted" and "trademarks" in short


EXAMPLE = ["/* ledger.c: rewrite a ledger in blocks */\n", "#include <stdio.h>\n", "#define BLOCK 8192\n",
           "#define LEDGER_MAGIC \"LDG1\"\n", "#define LEDGER_TITLE \"Monthly Ledger\"\n", "int rewrite(FILE *in, FILE *out) {\n",
           "    char buf[BLOCK];\n", "    size_t n = fread(buf, 1, BLOCK, in);  /* one BLOCK at a time */\n",
           "    int retries = 3;\n", "    return fwrite(buf, 1, n, out) == n ? 0 : -1;\n", "}\n",
           "The example in ledger.c reads its input one BLOCK at a time.\n"]


@pytest.mark.parametrize("question,value,unit", [
    ("What is the value of BLOCK in the example?", "8192", 2),
    ("What is BLOCK set to in the example?", "8192", 2),
    ("What is the value of LEDGER_MAGIC?", "LDG1", 3),
    ("What is the value of retries in the example?", "3", 8),
    # a string with a space, asked for as the name of what the identifier in brackets holds
    ("What is the name of the ledger's title (LEDGER_TITLE)?", "Monthly Ledger", 4),
])
def test_a_value_asked_of_a_name_is_the_value_bound_to_it(question, value, unit):
    f = retrieve.Found(0, 0, [10, 11], 11, 9.0)  # the passage found: prose naming BLOCK, not its definition
    how, short, got, _ = answering.decide(question, "The value of BLOCK is ledger.c.", [f], EXAMPLE)
    assert (how, short, got) == ("extracted", value, unit)
    # the model naming it stands where the passages hold its line; else the line is shown (as evidence too)
    assert answering.decide(question, f"It is {value}.", [f], EXAMPLE)[:2] == ("extracted", value)
    f.units.append(unit)
    assert answering.decide(question, f"It is {value}.", [f], EXAMPLE)[0] == "written"


def test_a_name_bound_to_two_values_takes_the_one_in_the_passages_or_none():
    texts = ["#define BLOCK 8192\n", "text\n", "#define BLOCK 4096\n", "BLOCK is the block size.\n"]
    q = "What is the value of BLOCK?"
    assert answering.binding(q, texts, [retrieve.Found(0, 0, [1, 2, 3], 3, 1.0)]) == ("4096", 2)
    assert answering.binding(q, texts, [retrieve.Found(0, 0, [3], 3, 1.0)]) is None
    assert answering.binding("What does BLOCK do?", texts, [retrieve.Found(0, 0, [3], 3, 1.0)]) is None


CHAIN = ["# ports\n", "PORT=8080\n", "export BACKUP_PORT=$PORT\n", "ADMIN_PORT=${BACKUP_PORT}\n",
         "VAR QX = 93008\n", "VAR RT = VAR QX\n", "LOOP_A=$LOOP_B\n", "LOOP_B=$LOOP_A\n", "CACHE=$XDG_HOME\n"]


@pytest.mark.parametrize("question,value,unit", [
    ("What is the value of PORT?", "8080", 1),
    ("What is the value of ADMIN_PORT?", "8080", 1),       # two links: ${BACKUP_PORT}, then $PORT
    ("What is BACKUP_PORT set to?", "8080", 1),
    ("What is the value of RT?", "93008", 4),              # RULER's form: VAR RT = VAR QX
    ("What is the value of LOOP_A?", "$LOOP_B", 6),        # a loop of names binds none: the reference as written
    ("What is the value of CACHE?", "$XDG_HOME", 8),       # a name the document never binds: as written
])
def test_a_value_naming_another_name_is_followed_to_that_names_value(question, value, unit):
    """"BACKUP_PORT=$PORT": asked BACKUP_PORT's value, the answer is PORT's (8080), shown with the line that binds
    it, as assignments.holding follows the chain the other way."""
    assert answering.binding(question, CHAIN, []) == (value, unit)


def test_a_miscopied_identifier_gives_way_to_the_passages():
    uuid = "dc778b88-df7d-4c6a-9f1e-1a2b3c4d5e6f"
    texts = ["Records.\n", f"The special magic uuid for quiet-harbor is: {uuid}.\n", "The end.\n"]
    q = "What is the special magic uuid for quiet-harbor?"
    how, short, _, _ = answering.decide(q, "The uuid is 778b888-df7d-4c6a-9f1e-1a2b3c4d5e6f.", [found(texts, 1)], texts)
    assert how == "written" and uuid in short and "778b888" not in short
    assert answering.completed("See --rule-file.", "Use --rules-file FILE.") == "See --rules-file."
    assert answering.completed("uid 371234", "uid 371235") == "uid 371234"  # a number is never made another one


def test_what_an_answer_adds_to_its_span_must_come_from_its_passage():
    texts = ["History\n", "The Quux cipher was designed by Ada Brook in 1994.\n", "It is still in use.\n"]
    q = "Who designed the Quux cipher?"
    praise = "Ada Brook, a renowned computer science and cryptography expert, is credited with designing the Quux cipher."
    how, short, unit, _ = answering.decide(q, praise, [found(texts, 1)], texts)
    assert (how, short, unit) == ("extracted", "Ada Brook", 1)
    plain = "The Quux cipher was designed by Ada Brook."
    assert answering.decide(q, plain, [found(texts, 1)], texts)[:2] == ("written", plain)


def test_an_identifier_is_checked_whole_and_a_number_not_inside_a_time():
    from infinipot_cli.answer import honesty

    text = "The uuid for tag-x is dc778b88-df7d-4c6a-9f1e-1a2b3c4d5e6f; the ferry leaves at 7:45; x86_64 builds."
    assert honesty.unsupported("It is 778b888-df7d-4c6a-9f1e-1a2b3c4d5e6f.", "", text) == \
        ["778b888-df7d-4c6a-9f1e-1a2b3c4d5e6f"]
    assert honesty.unsupported("It is 778b88-df7d-4c6a-9f1e-1a2b3c4d5e6f.", "", text)  # a piece of it is not it
    assert honesty.unsupported("It is dc778b88-df7d-4c6a-9f1e-1a2b3c4d5e6f, at 7:45, on x86.", "", text) == []
    assert honesty.unsupported("It leaves at 7.", "", "The ferry leaves at 7:45 from pier 3.") == ["7"]
    assert honesty.unsupported("It leaves at 7:45.", "", "The ferry leaves at 7:45 from pier 3.") == []
    assert honesty.unsupported("It uses 1024KiB.", "", "It uses 1024 KiB.") == []  # a number with its unit


def test_a_tiny_document_is_answered_from_itself_and_checked(builtin, tmp_path):
    """A question every word of which is common ("What is the answer?") finds no passage by its words: a document
    of a few lines is its own passage, and what the model writes is checked against it, as on every path."""
    from infinipot_cli.answer import honesty
    from infinipot_cli.documents import open_source
    from infinipot_cli.pot.config import PotConfig
    from infinipot_cli.session import Session

    path = tmp_path / "note.txt"
    path.write_text("ledger note: the answer is 7311\n")
    s = Session.start(builtin, PotConfig(size=512, keep=256))
    s.read(open_source(str(path), "auto"))
    a = s.ask("What is the answer?", grounded=True, max_new_tokens=48)
    assert a.grounded.evidence and "7311" in a.grounded.evidence[0].text
    assert a.text == honesty.NOT_SAID or "7311" in a.text, (a.how, a.text)
    assert not answering.non_answer(a.text, "What is the answer?") or a.how == "not-said"


def test_an_answer_written_over_the_pot_is_checked_too(builtin, tmp_path):
    """The pot path (the paper's answer over the pot's entries) gets answering's checks in grounding.ground: a
    non-answer is withheld, an identifier miscopied is written as the text has it."""
    from infinipot_cli.answer import honesty
    from infinipot_cli.answer.grounding import ground
    from infinipot_cli.documents import open_source
    from infinipot_cli.pot.config import PotConfig
    from infinipot_cli.session import Session

    uuid = "dc778b88-df7d-4c6a-9f1e-1a2b3c4d5e6f"
    path = tmp_path / "tags.txt"
    path.write_text(f"Harbour records.\nThe special magic uuid for quiet-harbor is: {uuid}.\nThe end.\n")
    s = Session.start(builtin, PotConfig(size=512, keep=256))
    s.read(open_source(str(path), "auto"))
    q = "What is the special magic uuid for quiet-harbor?"
    s.ask(q, grounded=True, from_pot=True, max_new_tokens=8)  # the pot's answer: its context is the check's text
    prompt, _ = s.prompts.ask(q)
    g = ground(s.engine, prompt, q, 'The answer is: "The document is not a helpful tool.', s._sources())
    assert g.answer == honesty.NOT_SAID and g.how == "not-said"
    g = ground(s.engine, prompt, q, "It is 778b888-df7d-4c6a-9f1e-1a2b3c4d5e6f.", s._sources())
    assert g.answer == f"It is {uuid}." and g.how == "written"


def test_a_uuid_asked_for_is_the_one_next_to_the_question_words():
    texts = ["Harbour register.\n", "The special magic uuid for quiet-harbor is: dc778b88-df7d-4c6a-9f1e-1a2b3c4d5e6f.\n",
             "The special magic uuid for loud-market is: 5e0a9c31-7b2d-4e8f-a1c6-3d9b7f2e4a10.\n"]
    q = "What is the special magic uuid for quiet-harbor?"
    # the model copies the neighbour's, cut at a hyphen: the passage's own span stands instead
    how, short, unit, _ = answering.decide(q, "It is 5e0a9c31-7b2d-", [found(texts, 1)], texts)
    assert (how, short, unit) == ("extracted", "dc778b88-df7d-4c6a-9f1e-1a2b3c4d5e6f", 1)
    assert answering.completed("It is 5e0a9c31-7b2d-", "".join(texts)) == "It is 5e0a9c31-7b2d-4e8f-a1c6-3d9b7f2e4a10"


def test_a_person_asked_for_and_a_sentence_naming_none_written():
    texts = ["The Quux block cipher\n", "The Quux cipher is a block cipher with a 128-bit block.\n",
             "It was designed by Ada Brook in 1994.\n", "It is still in use.\n"]
    q = "Who designed the Quux cipher?"
    written = "The Quux cipher is a block cipher with a 128-bit block."
    assert answering.decide(q, written, [found(texts, 2)], texts)[:3] == ("extracted", "Ada Brook", 2)
    # no person in the passage: not its unrelated sentence either
    assert answering.decide(q, written, [found(texts[:2] + texts[3:], 1)], texts[:2] + texts[3:])[0] == "not-said"


def test_a_span_a_unit_boundary_cut_is_shown_whole():
    # a long sentence is cut into units of at most 40 tokens, here inside the UUID
    texts = ["Register.\n", "The special magic uuid for quiet-harbor is: dc778b88-df7d-4", "c6a-9f1e-1a2b3c4d5e6f.\n",
             "The end.\n"]
    q = "What is the special magic uuid for quiet-harbor?"
    f = retrieve.Found(0, 0, [0, 1, 2, 3], 1, 9.0)
    how, short, unit, _ = answering.decide(q, "It is 5e0a9c31-7b2d-", [f], texts)
    assert (how, short, unit) == ("extracted", "dc778b88-df7d-4c6a-9f1e-1a2b3c4d5e6f", 1)


def test_a_quote_opening_with_a_pronoun_comes_with_what_it_stands_for():
    texts = ["The sixteenth DebConf took place in Heidelberg, Germany. ",
             "The seventeenth DebConf was held in Cape Town, South Africa. ", "It was the first DebConf in Africa.\n\n",
             "This function outputs key_file as a string. ", "That is why the file is kept.\n\n", "It is new.\n"]
    assert quotes.quote_units(texts, 2) == (1, 2)   # "It" is the seventeenth DebConf
    assert quotes.quote_units(texts, 3) == (3, 3)   # "This function": no pronoun, a sentence of its own
    assert quotes.quote_units(texts, 4) == (3, 4)   # "That is why ...": "that" as a pronoun
    assert quotes.quote_units(texts, 5) == (5, 5)   # a paragraph's first sentence has nothing before it to quote
    texts = ["Set logging._srcfile to None. ", "This avoids calling sys._getframe(). ", "This process runs once.\n"]
    assert quotes.quote_units(texts, 1) == (0, 1)   # "this" before a verb ("avoids")
    assert quotes.quote_units(texts, 2) == (2, 2)   # "this" before a noun ("process")


def test_a_unit_cut_inside_a_name_does_not_begin_with_a_number():
    # a long changelog line cut into units inside "CVE-2006-4336": the next unit's "4336" is no revision
    texts = ["gzip (1.3.5-15) unstable; urgency=high * security update, covering the following alerts: "
             "CVE-2006-4334 CVE-2006-", "4336 CVE-2006-4337 CVE-2006-4338\n"]
    q = "Which Debian revision fixed CVE-2010-0001?"
    cands = answering._candidates(spans.wanted(q), q, [(1.0, 0), (1.0, 1)], texts)
    assert [c[1].text for c in cands] == ["1.3.5-15"]
