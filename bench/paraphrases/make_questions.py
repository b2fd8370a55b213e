#!/usr/bin/env python3
"""Write questions.json and corpus.json for the paraphrase tuning set from the question list below.

The questions are on bench/corpus's documents (its docs/, read through its text/ cache) and are for tuning: every one
is asked the way a reader would ask it in their own words ("paraphrase": none of its content words occurs in the
passage, which verify.py checks). Layout and fields as in bench/testset (see its README.md):

Each entry: (id, doc, question, answers, passage, kind, phrasing).
  answers   case-insensitive substrings, any one of which answers the question (each occurs in the passage)
  passage   verbatim from the extracted text (whitespace-normalised): the sentence or line that holds the answer
  kind      fact | number | name | option
  phrasing  always "paraphrase" here
"where" is computed with bench/corpus/make_questions.py's own `locate` (a line for text documents, a page for PDFs, a
section for HTML). ALLOW would list the one word a question may share with its passage; none needs one.
Output fields: id, doc, question, answers, passage, where, kind, paraphrase_of (always null), phrasing.

corpus.json lists only the documents asked about, in the order of the list below, each copied from
bench/corpus/corpus.json (which bench/corpus/make_parts.py writes) with `path` made relative to this folder
("../corpus/docs/<file>"; `bench qa` and `bench summary` resolve a relative path against the folder holding
corpus.json), so the file is the same wherever the checkout lives.

Usage: cd bench/paraphrases && ../../.venv/bin/python make_questions.py
"""

from __future__ import annotations

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TESTSET = os.path.normpath(os.path.join(HERE, "..", "testset"))
if TESTSET not in sys.path:
    sys.path.insert(1, TESTSET)  # after our own folder: our make_questions/verify win for plain imports

# bench/testset/testset_lib.py: CORPUS (bench/corpus), its corpus_lib, and corpus_module (bench/corpus/<name>.py)
from testset_lib import CORPUS, corpus_lib, corpus_module, folder_module, write_json  # noqa: E402


def testset_module(name: str):
    """bench/testset/<name>.py loaded as module testset_<name> (ours have the same file names)."""
    return folder_module(TESTSET, "testset", name)


P = "paraphrase"

Q = [
    # ---------------------------------------------------------------- users-and-groups (html, 3K tokens)
    ("pu-1", "users-and-groups", "Which release of the Linux standards base marks the background-service account as "
     "obsolete?", ["1.3"],
     "LSB 1.3 lists daemon as legacy, and says: \"The 'daemon' UID/GID was used as an unprivileged UID/GID for "
     "daemons to execute under in order to limit their access to the system.", "number", P),
    ("pu-2", "users-and-groups", "In which folder are the ready-made profiles kept for dialling out over a phone line?",
     ["/etc/ppp/peers"],
     "Being in group dip allows you to use tools such as pppd, pon, and poff to make dialup connections to other "
     "systems using predefined configuration file(s) in the /etc/ppp/peers directory.", "name", P),
    ("pu-3", "users-and-groups", "Which switch of the filesystem backup program pings signed-in staff whenever it needs "
     "a human?", ["dump -n", "-n"],
     "The operator group is used by dump -n to notify logged-in operators via wall when it requires operator "
     "attention.", "option", P),
    ("pu-4", "users-and-groups", "Where does the documentation reader's account save its preformatted output?",
     ["/var/cache/man"],
     "The man program (sometimes) runs as user man, so it can write cat pages to /var/cache/man and update its "
     "databases there.", "name", P),
    # ---------------------------------------------------------------- vim-usr02 (text, 6K tokens)
    ("pv2-1", "vim-usr02", "Which single keyboard button brings up the built-in docs without typing anything?",
     ["<F1>", "F1"], "You could also use the first function key <F1>.", "option", P),
    ("pv2-2", "vim-usr02", "Which error code does the editor show when you try to leave with unsaved edits?",
     ["E37"], "E37: No write since last change (use ! to override)", "name", P),
    ("pv2-3", "vim-usr02", "I want to keep working but throw away my edits and start over from what's on disk; what "
     "do I type?", [":e!"], "The \":e!\" command reloads the original version of the file.", "option", P),
    # ---------------------------------------------------------------- gzip man page (man, 5K tokens)
    ("pgm-1", "gzip-man", "How do I squeeze something down but still have the unsqueezed original afterwards?",
     ["-k", "--keep"], "-k --keep Keep (don't delete) input files during compression or decompression.", "option",
     P),
    ("pgm-2", "gzip-man", "By roughly how much does it usually shrink ordinary prose or programs?",
     ["60-70%", "60-70"], "Typically, text such as source code or English is reduced by 60-70%.", "number", P),
    ("pgm-3", "gzip-man", "Which numbered standards memo describes the on-disk container this tool writes?",
     ["RFC 1952", "1952"],
     "The gzip file format is specified in P. Deutsch, GZIP file format specification version 4.3, "
     "<https://www.ietf.org/rfc/rfc1952.txt>, Internet RFC 1952 (May 1996).", "number", P),
    # ---------------------------------------------------------------- gzip changelog (changelog, 7K tokens)
    ("pgc-1", "gzip-changelog", "Whose twenty-five years of looking after it were acknowledged when the caretaker "
     "changed?", ["Bdale Garbee"],
     "Many thanks to Bdale Garbee for a quarter of a century worth of contributions to this package.", "name", P),
    ("pgc-2", "gzip-changelog", "On which architecture did the packaging stop running a check on unrepresentable "
     "dates?", ["mips64el"], "skip out of range timestamp test on mips64el (closes: #983706)", "name", P),
    ("pgc-3", "gzip-changelog", "Why did the 2016 upload drop the day stamp from the documentation?",
     ["reproducible builds", "reproducible"],
     "stop including date in manual to enable reproducible builds, closes: #794011", "fact", P),
    # ---------------------------------------------------------------- shared-mime-info spec (pdf, 8K tokens)
    ("psm-1", "shared-mime-info-spec", "How much of the beginning of a document should be inspected to decide if it's "
     "human-readable?", ["128 bytes", "128"],
     "Note: Checking the first 128 bytes of the file for ASCII control characters is a good way to guess whether a "
     "file is binary or text, but note that files with high-bit-set characters should still be treated as text "
     "since these can appear in UTF-8 text, unlike control characters.", "number", P),
    ("psm-2", "shared-mime-info-spec", "What should a hand-made correction be called so that it wins over everything "
     "else in its folder?", ["Override.xml"],
     "Any file named Override.xml takes precedence over all other files in the same packages directory.", "name", P),
    ("psm-3", "shared-mime-info-spec", "How must the binary lookup index be saved so that programs reading it never "
     "see a torn copy?", ["atomically"],
     "Cache files have to be written atomically - write to a temporary name, then move over the old file - so that "
     "clients that have the old cache file open and mmap’ed won’t get corrupt data.", "fact", P),
    # ---------------------------------------------------------------- python logging howto (html, 10K tokens)
    ("ppl-1", "python-logging-howto", "From which Python release can the network-based handlers also talk over local "
     "IPC endpoints?", ["3.4"], "Since 3.4, Unix domain sockets are also supported.", "number", P),
    ("ppl-2", "python-logging-howto", "Which parameter makes the output replace the previous log instead of adding to "
     "it?", ["filemode"],
     "If you want each run to start afresh, not remembering the messages from earlier runs, you can specify the "
     "filemode argument, by changing the call in the above example to:", "option", P),
    ("ppl-3", "python-logging-howto", "Which standard does the out-of-the-box timestamp layout resemble?",
     ["ISO8601", "RFC 3339"],
     "The default format for date/time display (shown above) is like ISO8601 or RFC 3339.", "name", P),
    # ---------------------------------------------------------------- tar man page (man, 12K tokens)
    ("ptm-1", "tar-man", "How do I have the originals deleted once they've been packed up?", ["--remove-files"],
     "--remove-files Remove files from disk after adding them to the archive.", "option", P),
    ("ptm-2", "tar-man", "If I turn on periodic status reports without saying how often, after how many archive "
     "units do they appear?", ["10"],
     "--checkpoint[=N] Display progress messages every Nth record (default 10).", "number", P),
    ("ptm-3", "tar-man", "How many bytes does a quantity written with a trailing lowercase b stand for, per unit?",
     ["512"], "b Blocks SIZE x 512", "number", P),
    # ---------------------------------------------------------------- glib key-file API reference (html, 12K tokens)
    ("pgk-1", "glib-keyfile", "Which Unicode form must these settings documents be written in?", ["UTF-8"],
     "Key files are always encoded in UTF-8.", "name", P),
    ("pgk-2", "glib-keyfile", "What happens to two sections that share a title?", ["merged together", "merged"],
     "Key files may also contain multiple groups with the same name; they are merged together.", "fact", P),
    ("pgk-3", "glib-keyfile", "Which flag must I pass when reading the settings in so that every language's variant "
     "is retained?", ["G_KEY_FILE_KEEP_TRANSLATIONS"],
     "If locale is to be non-NULL, or if the current locale will change over the lifetime of the GKeyFile, it must "
     "be loaded with G_KEY_FILE_KEEP_TRANSLATIONS in order to load strings for all locales.", "option", P),
    # ---------------------------------------------------------------- ssh man page, read on stdin (man, 13K tokens)
    ("pssh-1", "ssh-man", "How can I see the effective settings for a destination without actually connecting?",
     ["-G"], "-G Causes ssh to print its configuration after evaluating Host and Match blocks and exit.", "option",
     P),
    ("pssh-2", "ssh-man", "What's the conventional listening number for Internet Relay Chat that the forwarding "
     "walkthrough relies on?", ["6667"],
     "The following example tunnels an IRC session from the client to an IRC server at “server.example.com”, "
     "joining channel “#users”, nickname “pinky”, using the standard IRC port, 6667:", "number", P),
    ("pssh-3", "ssh-man", "Without any explicit setting, which kind of link does the VPN-style device forwarding "
     "create?", ["point-to-point"],
     "If the Tunnel directive is unset, it will be set to the default tunnel mode, which is “point-to-point”.",
     "fact", P),
    # ---------------------------------------------------------------- Sinatra README (markdown, 18K tokens)
    ("psr-1", "sinatra-readme", "When a handler hands off and nothing else fits the URL, what status code comes "
     "back?", ["404"], "If no matching route is found, a 404 is returned.", "number", P),
    ("psr-2", "sinatra-readme", "Which development server can't send partial responses incrementally?", ["Shotgun"],
     "Streaming does not work at all with Shotgun.", "name", P),
    ("psr-3", "sinatra-readme", "With the one-line way of switching on per-visitor state, where is everything kept?",
     ["in a cookie", "cookie"], "Note that `enable :sessions` actually stores all data in a cookie.", "fact", P),
    # ---------------------------------------------------------------- libtasn1 manual (pdf, 16K tokens)
    ("plt-1", "libtasn1", "Which include must my C program pull in to call these routines?", ["libtasn1.h"],
     "The header file of this library is libtasn1.h.", "name", P),
    ("plt-2", "libtasn1", "From which release can the encoded buffer and its length be left out when asking where a "
     "previously parsed piece begins and finishes?", ["3.7"],
     "Note that since libtasn1 3.7 the ider and ider_len parameters can be omitted, if the element is already "
     "decoded using asn1_der_decoding() .", "number", P),
    ("plt-3", "libtasn1", "Which switch makes the reverse-conversion tool time its own parsing speed?",
     ["-b", "--benchmark"], "-b, --benchmark perform a benchmark on decoding", "option", P),
    # ---------------------------------------------------------------- vim-usr41 (text, 16K tokens)
    ("pv41-1", "vim-usr41", "My script is stuck spinning forever; which keys stop it?", ["CTRL-C"],
     "If you happen to write a while loop that keeps on running, you can interrupt it by pressing CTRL-C "
     "(CTRL-Break on MS-Windows).", "option", P),
    ("pv41-2", "vim-usr41", "What does the built-in release-number variable hold when running 8.1?", ["801"],
     "800 is for version 8.0, version 8.1 has the value 801.", "number", P),
    ("pv41-3", "vim-usr41", "How do I make a script pause for a moment?", ["sleep"],
     "The `sleep` command makes Vim take a nap.", "name", P),
    # ---------------------------------------------------------------- python argparse (html, 19K tokens)
    ("ppa-1", "python-argparse", "When the parser rejects bad input, which exit value does the process end with?",
     ["2"], "This method prints a usage message including the message to the standard error and terminates the "
     "program with a status code of 2.", "number", P),
    ("ppa-2", "python-argparse", "If someone passes a lone dash where an input path is expected, what does it turn "
     "into?", ["sys.stdin"],
     "FileType objects understand the pseudo-argument '-' and automatically convert this into sys.stdin for "
     "readable FileType objects and sys.stdout for writable FileType objects:", "name", P),
    ("ppa-3", "python-argparse", "Which formatter leaves all spacing untouched, even in each option's blurb?",
     ["RawTextHelpFormatter"],
     "RawTextHelpFormatter maintains whitespace for all sorts of help text, including argument descriptions.",
     "name", P),
]

ALLOW: dict[str, list[str]] = {}


def corpus_entries(doc_ids: list[str]) -> list[dict]:
    """bench/corpus/corpus.json's entries for `doc_ids` (in that order), `path` relative to this folder."""
    src = os.path.join(CORPUS, "corpus.json")
    if not os.path.exists(src):
        raise SystemExit(f"{src} is missing: run `cd bench/corpus && ../../.venv/bin/python make_parts.py` first")
    with open(src, encoding="utf-8") as f:
        by_id = {d["id"]: d for d in json.load(f)}
    files = {row[0]: row[1] for row in corpus_lib.doc_rows()}
    out = []
    for doc in doc_ids:
        entry = dict(by_id[doc])
        entry["path"] = os.path.relpath(corpus_lib.doc_path(files[doc]), HERE)  # "../corpus/docs/<file>"
        out.append(entry)
    return out


def main() -> int:
    locate = corpus_module("make_questions").locate  # bench/corpus/make_questions.py's own
    table = {d[0]: d for d in corpus_lib.doc_rows()}
    out = []
    seen = set()
    for qid, doc, question, answers, passage, kind, phrasing in Q:
        assert qid not in seen, qid
        seen.add(qid)
        _, fname, dkind, _, _, opts = table[doc]
        where = locate(doc, dkind, corpus_lib.doc_path(fname), passage, opts["stdin"])
        q = {"id": qid, "doc": doc, "question": question, "answers": answers, "passage": passage, "where": where,
             "kind": kind, "paraphrase_of": None, "phrasing": phrasing}
        if qid in ALLOW:
            q["allow"] = ALLOW[qid]
        out.append(q)
    unknown = set(ALLOW) - seen
    assert not unknown, unknown
    docs = corpus_entries(list(dict.fromkeys(q["doc"] for q in out)))
    write_json(os.path.join(HERE, "corpus.json"), docs)
    write_json(os.path.join(HERE, "questions.json"), out)
    print(f"{len(out)} questions on {len(docs)} documents "
          f"({sum(q['phrasing'] == P for q in out)} paraphrases)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
