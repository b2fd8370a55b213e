#!/usr/bin/env python3
"""Write questions.json for the test set from the question list below, filling in "where" from the documents.

The questions were written by hand from the text infinipot extracts (text/<id>.txt), before any tuning on them, and
are for reporting only (README.md). "where" is computed with bench/corpus/make_questions.py's own `locate`:
  text docs (man/changelog/text/markdown): {"line": n} = the line of the file in docs/ where the passage starts;
  pdf: {"page": n, "page_label": ...} = the physical page whose extracted text holds the passage;
  html/epub: {"section": label} = infinipot's passage label (heading / chapter) holding the passage.

Each entry: (id, doc, question, answers, passage, kind, phrasing).
  answers   case-insensitive substrings, any one of which answers the question; [] when unanswerable
  passage   verbatim from the extracted text (whitespace-normalised): the sentence that holds the answer; None when
            unanswerable
  kind      fact | number | name | option | unanswerable
  phrasing  "paraphrase": worded so that none of the question's content words occurs in the passage (verify.py checks
            this; ALLOW lists the one word a question may share where it cannot be avoided, e.g. the program's name);
            "document": worded with the document's own terms
SUPPORT adds verbatim lines that follow the passage and carry the fact (a NEWS entry under its release header).
Output fields: id, doc, question, answers, passage, where, kind, paraphrase_of (always null here: no question
rephrases another one of the set), phrasing, and allow / support where given.
"""

from __future__ import annotations

import sys

from testset_lib import HERE, corpus_module, doc_path, doc_rows, write_json

N = None
P, D = "paraphrase", "document"

Q = [
    # ---------------------------------------------------------------- debian-history (pdf, 16K tokens)
    ("dh-1", "debian-history", "In which city was the first DebConf in Africa held?", ["Cape Town"],
     "The seventeenth DebConf Debconf16 was held in Cape Town, South Africa, from 23 June to 9 July 2016 (preceded "
     "by DebCamp and DebianDay). It was the first DebConf in Africa.", "name", D),
    ("dh-2", "debian-history", "Which couple inspired what the project is called?", ["Debra"],
     "The name comes from the names of the creator of Debian, Ian Murdock, and his wife, Debra.", "name", P),
    ("dh-3", "debian-history", "Why did the numbering jump from 0.93 straight to 1.1?", ["InfoMagic"],
     "Debian 1.0 was never released: InfoMagic, a CD vendor, accidentally shipped a development release of Debian "
     "and entitled it 1.0.", "fact", P),
    ("dh-4", "debian-history", "Who had just taken the helm when Sarge shipped?", ["Branden Robinson"],
     "Branden Robinson had just been appointed as Project Leader.", "name", P),
    ("dh-5", "debian-history", "Which processor line did the earliest adaptation to other hardware target?",
     ["m68k", "Motorola"],
     "During August 1995 (between Debian 0.93 Release 5 and Debian 0.93 Release 6), Hartmut Koptein started the "
     "first port for Debian, for the Motorola m68k family.", "name", P),
    ("dh-6", "debian-history", "Who designed the logo that the project chose in 1999?", [], N, "unanswerable", D),
    ("dh-7", "debian-history", "How young was the founder when he first wrote software?", ["nine"],
     "Ian was introduced to computers early in his life, he started actively programming at nine years of age.",
     "number", P),
    ("dh-8", "debian-history", "Which badly kept-up distribution does the founder's manifesto single out as an "
     "example?", ["Softlanding Linux System", "SLS"],
     "A case-in-point is the Softlanding Linux System (better known as SLS).", "name", P),
    # ---------------------------------------------------------------- libidn2 manual (pdf, 8K tokens)
    ("id-1", "libidn2", "Under which licenses is Libidn2 distributed?", ["LGPLv3 or GPLv2", "LGPLv3"],
     "The library is dual-licensed under LGPLv3 or GPLv2, see the file COPYING for detailed information.",
     "name", D),
    ("id-2", "libidn2", "Which header must my C source pull in?", ["idn2.h"],
     "To use the functions documented in this chapter, you need to include the file idn2.h like this:", "name", P),
    ("id-3", "libidn2", "Which helper library does it depend on to handle non-ASCII text?", ["libunistring"],
     "Libidn2 uses GNU libunistring (https://www.gnu.org/software/libunistring/ ) for Unicode processing and "
     "optionally GNU libiconv (https://www.gnu.org/software/ libiconv/) for character set conversion.", "name", P),
    ("id-4", "libidn2", "Since which version is IDN2_ALABEL_ROUNDTRIP the default behaviour for lookups?", ["2.2"],
     "Pass IDN2_ALABEL_ROUNDTRIP in flags to convert any input A-labels to U-labels and perform additional testing. "
     "This is default since version 2.2.", "number", D),
    ("id-5", "libidn2", "What's the smallest edit that moves an old libidn program onto the newer library?",
     ["idn2.h"],
     "To take advantage of these compatibility functions, it is sufficient to replace the idna.h header in legacy "
     "code, with idn2.h.", "fact", P),
    ("id-6", "libidn2", "Which IETF successor to the old text-preparation scheme is recommended for fresh projects?",
     ["PRECIS"],
     "Applications requiring the stringprep processing should continue using the original libidn, and new "
     "applications should consider using the PRECIS framework.", "name", P),
    ("id-7", "libidn2", "Which option of the idn2 command-line tool registers a label?", ["--register", "-r"],
     "-r, --register Register label", "option", D),
    ("id-8", "libidn2", "Which flag reveals the encoding the command-line tool thinks my environment uses?",
     ["--debug"], "Use --debug to find out what this charset is.", "option", P),
    # ---------------------------------------------------------------- Lintian User's Manual (html, 9K tokens)
    ("lm-1", "lintian-manual", "Which path is preferred for a source package's lintian overrides file?",
     ["debian/source/lintian-overrides"],
     "If the override is for a source package, you have to place it at debian/source/lintian-overrides or "
     "debian/source.lintian-overrides (the former path is preferred).", "name", D),
    ("lm-2", "lintian-manual", "What is the name of the scratch area where the checker saves data it has gathered?",
     ["laboratory", "lab"],
     "Lintian uses an archive directory, called laboratory, in which it stores information about the packages it "
     "examines.", "name", P),
    ("lm-3", "lintian-manual", "How long is a sweep over all of Debian's uploads supposed to take?", ["5 days"],
     "performance: Lintian should make it possible to check single packages within seconds or check the full "
     "archive within 5 days.", "number", P),
    ("lm-4", "lintian-manual", "How do I get Lintian to also show me the nit-picky, often-disputed complaints?",
     ["--pedantic"], "They are not displayed unless the --pedantic option is set.", "option", P),
    ("lm-5", "lintian-manual", "How can I hold on to the scratch workspace after a run ends, for inspection?",
     ["--keep-lab"],
     "Lintian creates a temporary lab in /tmp which is removed again after Lintian has completed its checks, unless "
     "the --keep-lab is used.", "option", P),
    ("lm-6", "lintian-manual", "What is the maximum length of a tag name?", ["68 characters", "68"],
     "The tag name should be at most 68 characters long.", "number", D),
    ("lm-7", "lintian-manual", "Which mailing address reaches the people who look after the tool?",
     ["lintian-maint@debian.org"],
     "Please send your comments to the lintian maintainers lintian-maint@debian.org.", "name", P),
    ("lm-8", "lintian-manual", "Which Perl package name does the check name contrib/hallo-world result in?",
     ["Lintian::contrib::hallo_world"],
     "As an example, the check name contrib/hallo-world will result in the Perl package name "
     "Lintian::contrib::hallo_world.", "name", D),
    # ---------------------------------------------------------------- SQLite datatypes page (html, 7K tokens)
    ("sq-1", "sqlite-datatypes", "As of which version does SQLite provide STRICT tables?", ["3.37.0"],
     "Update: As of version 3.37.0 (2021-11-27), SQLite provides STRICT tables that do rigid type enforcement, for "
     "developers who prefer that kind of thing.", "number", D),
    ("sq-2", "sqlite-datatypes", "How does the engine hold on/off flags, since it has no dedicated type for them?",
     ["integers"], "Instead, Boolean values are stored as integers 0 (false) and 1 (true).", "fact", P),
    ("sq-3", "sqlite-datatypes", "When kept as floating values, from what moment are timestamps counted?",
     ["November 24, 4714 B.C.", "4714"],
     "REAL as Julian day numbers, the number of days since noon in Greenwich on November 24, 4714 B.C. according to "
     "the proleptic Gregorian calendar.", "fact", P),
    ("sq-4", "sqlite-datatypes", "Which older label did the binary-data column preference carry before being given "
     "its present one?", ["NONE"],
     "(Historical note: The \"BLOB\" type affinity used to be called \"NONE\".", "name", P),
    ("sq-5", "sqlite-datatypes", "What affinity does a column declared as FLOATING POINT get?", ["INTEGER"],
     "Note that a declared type of \"FLOATING POINT\" would give INTEGER affinity, not REAL affinity, due to the "
     "\"INT\" at the end of \"POINT\".", "name", D),
    ("sq-6", "sqlite-datatypes", "What does an expression like 5 / 0 evaluate to in SQLite?", ["NULL"],
     "Division by zero gives a result of NULL.", "fact", P),
    ("sq-7", "sqlite-datatypes", "Which built-in collation treats 'abc' and 'abc   ' (with blanks after) as equal?",
     ["RTRIM"], "RTRIM - The same as binary, except that trailing space characters are ignored.", "name", P),
    ("sq-8", "sqlite-datatypes", "What is the default page size of an SQLite database file?", [], N,
     "unanswerable", D),
    # ---------------------------------------------------------------- xz man page (man, 21K tokens)
    ("xz-1", "xz-man", "How do I make xz leave the original in place after packing it?", ["--keep", "-k"],
     "-k, --keep Don't delete the input files.", "option", P),
    ("xz-2", "xz-man", "What is xz's default compression preset level?", ["-6"],
     "Select a compression preset level. The default is -6.", "number", D),
    ("xz-3", "xz-man", "Roughly how much RAM is needed to unpack something made with the strongest setting?",
     ["65 MiB"],
     "For example, decompressing a file created with xz -9 currently requires 65 MiB of memory.", "number", P),
    ("xz-4", "xz-man", "How do I hand flags to the compressor when another program such as tar launches it?",
     ["XZ_OPT"],
     "XZ_OPT This is for passing options to xz when it is not possible to set the options directly on the xz "
     "command line.", "name", P),
    ("xz-5", "xz-man", "Unless told otherwise, which checksum algorithm does xz embed?", ["CRC64"],
     "crc64 Calculate CRC64 using the polynomial from ECMA-182. This is the default, since it is slightly better "
     "than CRC32 at detecting damaged files and the speed difference is negligible.", "name", P),
    ("xz-6", "xz-man", "What is the longest sequence of processing stages I can stack in a custom setup?", ["four"],
     "The maximum number of filters in the chain is four, but typically a filter chain has only one or two "
     "filters.", "number", P),
    ("xz-7", "xz-man", "Which release of XZ Utils added the --rsyncable option?", [], N, "unanswerable", D),
    ("xz-8", "xz-man", "In the parallel compression example, which xz option forces single-threaded mode?",
     ["-T1"],
     "The option -T1 for xz is there to force it to single-threaded mode, because xargs(1) is used to control the "
     "amount of parallelization.", "option", D),
    # ---------------------------------------------------------------- xargs man page, read on stdin (man, 4K tokens)
    ("xa-1", "xargs-man", "Which command does xargs run when none is given?", ["echo"],
     "xargs reads items from the standard input, delimited by blanks (which can be protected with double or single "
     "quotes or a backslash) or newlines, and executes the command (default is echo) one or more times with any "
     "initial- arguments followed by items read from standard input.", "name", D),
    ("xa-2", "xargs-man", "How do I let xargs cope with file names that have spaces or line breaks in them?",
     ["-0", "--null"], "In these situations it is better to use the -0 option, which prevents such problems.",
     "option", P),
    ("xa-3", "xargs-man", "How can I have several copies of the command going at once?", ["-P", "--max-procs"],
     "-P max-procs, --max-procs=max-procs Run up to max-procs processes at a time; the default is 1.", "option", P),
    ("xa-4", "xargs-man", "How can I avoid a pointless single invocation when the pipe feeding xargs delivers "
     "nothing?", ["--no-run-if-empty", "-r"],
     "-r, --no-run-if-empty If the standard input does not contain any nonblanks, do not run the command.",
     "option", P),
    ("xa-5", "xargs-man", "How many bytes of headroom are subtracted when the largest allowed command line is "
     "calculated?", ["2048"],
     "The largest allowed value is system-dependent, and is calculated as the argument length limit for exec, less "
     "the size of your environment, less 2048 bytes of headroom.", "number", D),
    ("xa-6", "xargs-man", "What exit status does xargs return if the command exited with status 255?", ["124"],
     "124 if the command exited with status 255", "number", D),
    ("xa-7", "xargs-man", "What exit code signals that the program xargs wanted to launch doesn't exist?", ["127"],
     "127 if the command is not found", "number", P),
    ("xa-8", "xargs-man", "Why is it unsafe to rely on xargs on a multi-user system?", ["time gap"],
     "It is not possible for xargs to be used securely, since there will always be a time gap between the "
     "production of the list of input files and their use in the commands that xargs issues.", "fact", P),
    # ---------------------------------------------------------------- grep NEWS (changelog, 13K tokens)
    ("gn-1", "grep-news", "In which version did grep's Perl-style pattern engine move to the second generation of "
     "its regex library?", ["3.8"],
     "* Noteworthy changes in release 3.8 (2022-09-02) [stable]", "number", P),
    ("gn-2", "grep-news", "Which two new command-line options customize the output when -A, -B or -C is being "
     "used?", ["--group-separator", "--no-group-separator"],
     "Two new command-line options, --group-separator=ARGUMENT and --no-group-separator, enable further "
     "customization of the output when -A, -B or -C is being used.", "option", D),
    ("gn-3", "grep-news", "In which release did the GREP_OPTIONS environment variable stop affecting grep's "
     "behavior?", ["3.6"], "* Noteworthy changes in release 3.6 (2020-11-08) [stable]", "number", D),
    ("gn-4", "grep-news", "How do I cancel an -i given earlier on the command line (for example in an alias)?",
     ["--no-ignore-case"],
     "The new --no-ignore-case option causes grep to observe case distinctions, overriding any previous -i "
     "(--ignore-case) option.", "option", P),
    ("gn-5", "grep-news", "What technique made fixed-string searches with a long list of words speed up?",
     ["Aho-Corasick"],
     "grep -F is now typically much faster when many patterns are given, as it now uses the Aho-Corasick algorithm "
     "instead of the Commentz-Walter algorithm in that case.", "name", P),
    ("gn-6", "grep-news", "Which flag that once read input via memory mapping has since vanished altogether?",
     ["--mmap"],
     "grep's --mmap option was disabled in March of 2010, and began to elicit a warning in January of 2012. Now it "
     "is completely gone.", "option", P),
    ("gn-7", "grep-news", "Which grep release added a --json output format?", [], N, "unanswerable", D),
    ("gn-8", "grep-news", "By what margin did the speed of the 2.0 rewrite beat its predecessor?",
     ["at least 30%", "30%"],
     "Performance has been improved; the amount of improvement is platform dependent, but (for example) grep 2.0 "
     "typically runs at least 30% faster than grep 1.6 on a DECstation using the MIPS compiler.", "number", P),
    # ---------------------------------------------------------------- Vim user manual chapter 10 (text, 7K tokens)
    ("v10-1", "vim-usr10", "How do I add more keystrokes onto the end of a macro I already recorded in c?",
     ["uppercase", "qC"], "To append to a register, use an uppercase letter.", "fact", P),
    ("v10-2", "vim-usr10", "Which flag makes :substitute change every occurrence on the line?", ["g", "global"],
     "To change every occurrence on the line, you need to add the g (global) flag.", "option", D),
    ("v10-3", "vim-usr10", "How do I get Vim to check with me about every single replacement during a "
     "search-and-replace?", ["confirm", "c"],
     "The c (confirm) flag tells \":substitute\" to ask you for confirmation before it performs each substitution.",
     "option", P),
    ("v10-4", "vim-usr10", "What is the default range for the :global command?", ["whole file"],
     "The default range for the global command is the whole file.", "fact", D),
    ("v10-5", "vim-usr10", "How can I force Vim to clobber a target that's already there when saving a range of "
     "lines?", ["write!", "!"],
     "If you know what you are doing and want to overwrite the file, append !: > :.,$write! tempo", "option", P),
    ("v10-6", "vim-usr10", "Which setting makes Vim break lines by itself as I type?", ["textwidth"],
     "To make this happen while inserting text, set the 'textwidth' option: > :set textwidth=72", "option", P),
    ("v10-7", "vim-usr10", "What is the most keystrokes one recorded macro can hold?", [], N, "unanswerable", D),
    ("v10-8", "vim-usr10", "How do I force a repaint of the display after another program garbled it?",
     ["CTRL-L"], "To tell Vim to redraw the screen: > CTRL-L", "option", P),
    # ---------------------------------------------------------------- Puma README (markdown, 4K tokens)
    ("pu-1", "puma-readme", "If I just type the bare command, which app definition does it load?", ["config.ru"],
     "Without arguments, puma will look for a rackup (.ru) file in working directory called `config.ru`.",
     "name", P),
    ("pu-2", "puma-readme", "What is Puma's default thread pool size on MRI?", ["0:5"],
     "The current default is `0:16` and on MRI is `0:5`.", "number", D),
    ("pu-3", "puma-readme", "How do I share application code between child processes via copy-on-write so they "
     "use less RAM?", ["--preload", "preload_app!"], "Use the `--preload` flag from the command line:",
     "option", P),
    ("pu-4", "puma-readme", "Which HTTP status is returned when something breaks in the web tier itself rather than "
     "in my code?", ["500"],
     "If puma encounters an error outside of the context of your application, it will respond with a 500 and a "
     "simple textual error message", "number", P),
    ("pu-5", "puma-readme", "On which port does Puma start the control server in the README's example?",
     ["9293"], "Puma will start the control server on localhost port 9293.", "number", D),
    ("pu-6", "puma-readme", "By default, which Ruby script holds the server's tuning when I don't pass -C?",
     ["config/puma.rb"],
     "If no configuration file is specified, Puma will look for a configuration file at `config/puma.rb`.",
     "name", P),
    ("pu-7", "puma-readme", "What missing system call rules out running several worker processes on Microsoft's "
     "OS?", ["fork"], "**Windows**: Cluster mode is not supported due to a lack of fork(2).", "name", P),
    ("pu-8", "puma-readme", "What is Puma's default worker timeout in seconds?", [], N, "unanswerable", D),
]

# Extra verbatim lines that, with the passage, carry the answer (a NEWS entry under its release header).
SUPPORT = {
    "gn-1": ["The -P option is now based on PCRE2 instead of the older PCRE, thanks to code contributed by "
             "Carlo Arenas."],
    "gn-3": ["The GREP_OPTIONS environment variable no longer affects grep's behavior."],
}

# The one content word a paraphrase may share with its passage, where no natural wording avoids it.
ALLOW = {
    "xa-8": ["xargs"],
}


def main() -> int:
    locate = corpus_module("make_questions").locate  # bench/corpus/make_questions.py's own
    table = {d[0]: d for d in doc_rows()}
    out = []
    seen = set()
    for qid, doc, question, answers, passage, kind, phrasing in Q:
        assert qid not in seen, qid
        seen.add(qid)
        _, fname, dkind, _, _, opts = table[doc]
        where = locate(doc, dkind, doc_path(fname), passage, opts["stdin"]) if passage else {}
        q = {"id": qid, "doc": doc, "question": question, "answers": answers, "passage": passage, "where": where,
             "kind": kind, "paraphrase_of": None, "phrasing": phrasing}
        if qid in ALLOW:
            q["allow"] = ALLOW[qid]
        if qid in SUPPORT:
            q["support"] = SUPPORT[qid]
        out.append(q)
    unknown = (set(SUPPORT) | set(ALLOW)) - seen
    assert not unknown, unknown
    write_json(f"{HERE}/questions.json", out)
    n_para = sum(q["phrasing"] == P for q in out)
    n_unans = sum(q["kind"] == "unanswerable" for q in out)
    print(f"{len(out)} questions ({n_para} paraphrases, {n_unans} unanswerable)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
