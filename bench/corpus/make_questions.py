#!/usr/bin/env python3
"""Write questions.json from the question list below, filling in "where" from the documents themselves.

Each entry: (id, doc, question, answers, passage, kind, paraphrase_of). "where" is computed:
  text docs (man/changelog/text/markdown): {"line": n} = the line of the source file where the passage starts;
  pdf: {"page": n, "page_label": ...} = the physical page whose extracted text holds the passage;
  html/epub: {"section": label} = infinipot's passage label (heading / chapter) holding the passage.
Unanswerable questions have answers [] and passage null (verify.py checks no answer-like text is required).
"""

from __future__ import annotations

import re
import sys

from corpus_lib import HERE, doc_path, doc_rows, passages, squash, write_json

N = None
Q = [
    # ---------------------------------------------------------------- users-and-groups (html, 3K tokens)
    ("ug-1", "users-and-groups", "What uid did the operator user have?", ["37"],
     "It had uid 37.", "number", N),
    ("ug-2", "users-and-groups", "As which user does squid run?", ["proxy"],
     "For example, group proxy is used by pdnsd, and squid runs as user proxy.", "name", N),
    ("ug-3", "users-and-groups", "Which system account does the Squid web cache use to run?", ["proxy"],
     "For example, group proxy is used by pdnsd, and squid runs as user proxy.", "name", "ug-2"),
    ("ug-4", "users-and-groups", "Which uid and gid did the gnats user and group have?", ["41"],
     "they had uid/gid 41.", "number", N),
    ("ug-5", "users-and-groups", "Who owns the lpr system's spool directories?", ["lp/lp", "lp"],
     "The lpr system keeps its spool directories owned by lp/lp.", "name", N),
    ("ug-6", "users-and-groups", "Which uid is assigned to the postgres user?", [], N, "unanswerable", N),
    ("ug-7", "users-and-groups", "Which tool keeps the master passwd and group entries in sync on Debian systems?",
     ["update-passwd"], "The update-passwd tool keeps the entries in these master files in sync on all Debian systems.", "name", N),
    # ---------------------------------------------------------------- vim-usr02 (text, 6K tokens)
    ("v2-1", "vim-usr02", "Which key redoes a change after an undo?", ["CTRL-R"],
     "If you undo too many times, you can press CTRL-R (redo) to reverse the preceding command.", "option", N),
    ("v2-2", "vim-usr02", "How do I undo an undo in Vim?", ["CTRL-R"],
     "If you undo too many times, you can press CTRL-R (redo) to reverse the preceding command.", "option", "v2-1"),
    ("v2-3", "vim-usr02", "Which command undoes all the changes made on the last line that was edited?",
     ["U"], "There's a special version of the undo command, the \"U\" (undo line) command.", "option", N),
    ("v2-5", "vim-usr02", "Which command quits Vim and throws away all changes?", [":q!"],
     "Vim has a quit-and-throw-things-away command. It is: > :q!", "option", N),
    ("v2-6", "vim-usr02", "Which command does the manual use to start the GUI Vim on file.txt?", ["gvim file.txt"],
     "To start Vim, enter this command: > gvim file.txt", "option", N),
    ("v2-4", "vim-usr02", "Which command undoes the last edit?", ["u"],
     "The \"u\" command undoes the last edit.", "option", N),
    # ---------------------------------------------------------------- vim-usr41 (text, 16K tokens)
    ("v41-1", "vim-usr41", "What prefix starts an octal number in Vim9 script?", ["0o"],
     "An octal number starts with \"0o\", \"0O\".", "fact", N),
    ("v41-2", "vim-usr41", "Which operator concatenates strings in Vim script?", [".."],
     "Strings can be concatenated with \"..\" (see |expr6|).", "fact", N),
    ("v41-3", "vim-usr41", "Which character starts a comment in Vim9 script?", ["#"],
     "In |Vim9| script the character # starts a comment.", "fact", N),
    ("v41-4", "vim-usr41", "Which fileformat is recommended for Vim scripts?", ["unix"],
     "For Vim scripts it is recommended to always use the Unix fileformat.", "fact", N),
    # ---------------------------------------------------------------- bash man page (man, 100K tokens)
    ("bm-1", "bash-man", "Which option makes bash read commands from a file instead of ~/.bashrc?", ["--rcfile"],
     "The --rcfile file option will force bash to read and execute commands from file instead of "
     "/etc/bash.bashrc and ~/.bashrc.", "option", N),
    ("bm-2", "bash-man", "How can I make an interactive bash use a different startup file than its usual bashrc?",
     ["--rcfile", "--init-file"],
     "The --rcfile file option will force bash to read and execute commands from file instead of "
     "/etc/bash.bashrc and ~/.bashrc.", "option", "bm-1"),
    ("bm-3", "bash-man", "Which reserved word creates a coprocess?", ["coproc"],
     "A coprocess is a shell command preceded by the coproc reserved word.", "name", N),
    ("bm-4", "bash-man", "What default value does bash give HISTSIZE?", ["500"],
     "The shell sets the default value to 500 after reading any startup files.", "number", N),
    ("bm-7", "bash-man", "What exit status does bash return when a command is not found?", ["127"],
     "If a command is not found, the child process created to execute it returns a status of 127.", "number", N),
    ("bm-5", "bash-man", "Under which name does bash start as a restricted shell?", ["rbash"],
     "If bash is started with the name rbash, or the -r option is supplied at invocation, the shell becomes "
     "restricted.", "name", N),
    ("bm-6", "bash-man", "Which command should be used to submit a bug report about bash?", ["bashbug"],
     "Once you have determined that a bug actually exists, use the bashbug command to submit a bug report.",
     "name", N),
    # ---------------------------------------------------------------- bashref (html, 118K tokens)
    ("br-1", "bashref", "Which Bash version and release date does the reference manual describe?",
     ["5.2", "19 September 2022"],
     "This text is a brief description of the features that are present in the Bash shell (version 5.2, "
     "19 September 2022).", "number", N),
    ("br-2", "bashref", "Which shell option makes ** match all files and subdirectories recursively?", ["globstar"],
     "When the globstar shell option is enabled, and ‘*’ is used in a filename expansion context, two adjacent "
     "‘*’s used as a single pattern will match all files and zero or more directories and subdirectories.",
     "option", N),
    ("br-3", "bashref", "Which Bash version introduced the BASH_COMPAT variable?", ["4.3"],
     "Bash-4.3 introduced a new shell variable: BASH_COMPAT.", "number", N),
    ("br-4", "bashref", "Where does 'make install' put bash unless told otherwise?", ["/usr/local/bin"],
     "‘make install exec_prefix=/’ will install bash and bashbug into /bin instead of the default /usr/local/bin.",
     "fact", N),
    ("br-5", "bashref", "To which email address can suggestions and philosophical bug reports be mailed?",
     ["bug-bash@gnu.org"],
     "Suggestions and ‘philosophical’ bug reports may be mailed to bug-bash@gnu.org or posted to the Usenet "
     "newsgroup gnu.bash.bug.", "name", N),
    # ---------------------------------------------------------------- gzip man page (man, 5K tokens)
    ("gm-5", "gzip-man", "What extension does gzip give the files it compresses?", [".gz"],
     "Whenever possible, each file is replaced by one with the extension .gz, while keeping the same ownership "
     "modes, access and modification times.", "fact", N),
    ("gm-6", "gzip-man", "Which coding method does gzip use to reduce file size?", ["Lempel-Ziv", "LZ77"],
     "The gzip command reduces the size of the named files using Lempel-Ziv coding (LZ77).", "name", N),
    ("gm-1", "gzip-man", "What is gzip's default compression level?", ["-6", "6"],
     "The default compression level is -6 (that is, biased towards high compression at expense of speed).",
     "number", N),
    ("gm-2", "gzip-man", "What exit status does gzip return when a warning occurs?", ["2"],
     "If a warning occurs, exit status is 2.", "number", N),
    ("gm-3", "gzip-man", "Which option suppresses gunzip's warning about trailing garbage after tape padding?",
     ["--quiet"], "You can use the --quiet option to suppress the warning.", "option", N),
    ("gm-4", "gzip-man", "Which long option selects the fastest compression method?", ["--fast"],
     "where -1 or --fast indicates the fastest compression method (less compression)", "option", N),
    # ---------------------------------------------------------------- tar man page (man, 12K tokens)
    ("tm-5", "tar-man", "Which tar option creates a new archive?", ["-c", "--create"],
     "-c, --create Create a new archive.", "option", N),
    ("tm-1", "tar-man", "What is the maximum verbosity level of tar?", ["3"],
     "The maximum verbosity level is 3.", "number", N),
    ("tm-2", "tar-man", "Which exit code does tar use for a fatal, unrecoverable error?", ["2"],
     "2 Fatal error.", "number", N),
    ("tm-3", "tar-man", "Which short option filters the archive through xz?", ["-J"],
     "-J, --xz Filter the archive through xz(1).", "option", N),
    ("tm-4", "tar-man", "What compression level does tar use by default with -z?", [], N, "unanswerable", N),
    # ---------------------------------------------------------------- rsync man page (man, 69K tokens)
    ("rm-1", "rsync-man", "Which TCP port does an rsync daemon typically use?", ["873"],
     "daemon, typically using TCP port 873.", "number", N),
    ("rm-2", "rsync-man", "Which exit value means a partial transfer due to error?", ["23"],
     "23 - Partial transfer due to error", "number", N),
    ("rm-3", "rsync-man", "What does rsync's exit code 23 mean?", ["partial transfer"],
     "23 - Partial transfer due to error", "fact", "rm-2"),
    ("rm-7", "rsync-man", "Which option deletes extraneous files from the receiving side?", ["--delete"],
     "--delete This tells rsync to delete extraneous files from the receiving side (ones that aren't on the "
     "sending side), but only for the directories that are being synchronized.", "option", N),
    ("rm-4", "rsync-man", "Which options does --archive stand for?", ["-rlptgoD"],
     "This is equivalent to -rlptgoD.", "option", N),
    ("rm-5", "rsync-man", "Which environment variable can hold the daemon password to avoid the prompt?",
     ["RSYNC_PASSWORD"], "password prompt by setting the environment variable RSYNC_PASSWORD", "name", N),
    ("rm-6", "rsync-man", "Which exit value means the --max-delete limit stopped deletions?", ["25"],
     "25 - The --max-delete limit stopped deletions", "number", N),
    # ---------------------------------------------------------------- gzip changelog (changelog, 7K tokens)
    ("gc-1", "gzip-changelog", "Which CVE did gzip 1.12-1 address?", ["CVE-2022-1271"],
     "address CVE-2022-1271 (closes: #1009168)", "name", N),
    ("gc-2", "gzip-changelog", "Which vulnerability identifier was fixed by the zgrep arbitrary-file-write fix?",
     ["CVE-2022-1271"], "address CVE-2022-1271 (closes: #1009168)", "name", "gc-1"),
    ("gc-3", "gzip-changelog", "Which Debian revision fixed CVE-2010-0001?", ["1.3.12-9"],
     "gzip (1.3.12-9) unstable; urgency=high", "number", N),
    ("gc-4", "gzip-changelog", "Who uploaded gzip 1.12-1?", ["Milan Kupcevic"],
     "-- Milan Kupcevic <milan@debian.org> Sat, 09 Apr 2022 22:22:26 -0400", "name", N),
    ("gc-5", "gzip-changelog", "Which command was added as a near-clone of zmore?", ["zless"],
     "add 'zless' as a near-clone of 'zmore', closes bug 1776", "name", N),
    # ---------------------------------------------------------------- coreutils NEWS (changelog, 57K tokens)
    ("cn-1", "coreutils-news", "When was coreutils 9.1 released?", ["2022-04-15"],
     "* Noteworthy changes in release 9.1 (2022-04-15) [stable]", "number", N),
    ("cn-2", "coreutils-news", "Which coreutils release added b2sum?", ["8.26"],
     "* Noteworthy changes in release 8.26 (2016-11-30) [stable]", "number", N),
    ("cn-3", "coreutils-news", "In which release did the numfmt program first appear?", ["8.21"],
     "* Noteworthy changes in release 8.21 (2013-02-14) [stable]", "number", N),
    ("cn-4", "coreutils-news", "What new program runs a command with modified stdio buffering?", ["stdbuf"],
     "stdbuf: A new program to run a command with modified stdio buffering", "name", N),
    ("cn-7", "coreutils-news", "In which release did readlink appear as a new program?", ["4.5.5"],
     "[4.5.5]", "number", N),
    ("cn-5", "coreutils-news", "On what date was coreutils 9.2 released?", [], N, "unanswerable", N),
    ("cn-6", "coreutils-news", "Which command was added to complement base64 and base32?", ["basenc"],
     "basenc is added to complement existing base64,base32 commands,", "name", N),
    # ---------------------------------------------------------------- libtasn1 manual (pdf, 16K tokens)
    ("lt-1", "libtasn1", "Under which license can the libtasn1 library itself be redistributed?",
     ["Lesser General Public License version 2.1", "LGPL"],
     "terms of the GNU Lesser General Public License version 2.1 or later.", "name", N),
    ("lt-2", "libtasn1", "Which ITU-T recommendation defines the DER encoding the library implements?", ["X.690"],
     "Distinguished Encoding Rules (DER, as per X.690) encoding and decoding", "name", N),
    ("lt-3", "libtasn1", "Which tool generates a DER encoding from an ASN.1 definitions file?", ["asn1Coding"],
     "asn1Coding generates a DER encoding from a file with ASN.1 definitions", "name", N),
    ("lt-4", "libtasn1", "What does asn1_check_version return if the run-time library is too old?", ["NULL"],
     "Returns: Version string of run-time library, or NULL if the run-time library does not meet the required "
     "version number.", "fact", N),
    ("lt-5", "libtasn1", "What is the numeric value of ASN1_MAX_NAME_SIZE?", [], N, "unanswerable", N),
    # ---------------------------------------------------------------- shared-mime-info spec (pdf, 8K tokens)
    ("sm-1", "shared-mime-info-spec", "Which version of the Shared MIME-info Database specification is this?",
     ["0.21"], "This is version 0.21 of the Shared MIME-info Database specification, last updated 2 October 2018.",
     "number", N),
    ("sm-2", "shared-mime-info-spec", "What is the default weight of a glob rule?", ["50"],
     "The default weight value is 50, and the maximum is 100.", "number", N),
    ("sm-3", "shared-mime-info-spec", "Which extended attribute may hold a file's MIME type?", ["user.mime_type"],
     "An implementation MAY also get a file’s MIME type from the user.mime_type extended attribute.", "name", N),
    ("sm-4", "shared-mime-info-spec", "Of which type is inode/mount-point a subclass?", ["inode/directory"],
     "An inode/mount-point is a subclass of inode/directory.", "name", N),
    ("sm-5", "shared-mime-info-spec", "What is the maximum length of a MIME type name?", [], N, "unanswerable", N),
    # ---------------------------------------------------------------- python argparse (html, 19K tokens)
    ("pa-1", "python-argparse", "What is the default value of prefix_chars?", ["-"],
     "The prefix_chars= argument defaults to '-'.", "fact", N),
    ("pa-2", "python-argparse", "In which Python version was the exit_on_error parameter added?", ["3.9"],
     "Changed in version 3.9: exit_on_error parameter was added.", "number", N),
    ("pa-3", "python-argparse", "Which ArgumentParser argument lets arguments be read from files?",
     ["fromfile_prefix_chars"],
     "fromfile_prefix_chars - The set of characters that prefix files from which additional arguments should be "
     "read (default: None)", "option", N),
    ("pa-6", "python-argparse", "How do you restrict an argument to a fixed set of allowed values?", ["choices"],
     "These can be handled by passing a sequence object as the choices keyword argument to add_argument().",
     "option", N),
    ("pa-4", "python-argparse", "What should replace optparse.OptionParser.add_option() calls?",
     ["add_argument"],
     "Replace all optparse.OptionParser.add_option() calls with ArgumentParser.add_argument() calls.", "name", N),
    ("pa-5", "python-argparse", "In which Python version was allow_abbrev added?", ["3.5"],
     "Changed in version 3.5: allow_abbrev parameter was added.", "number", N),
    # ---------------------------------------------------------------- python logging howto (html, 10K tokens)
    ("pl-1", "python-logging-howto", "What is the default logging level?", ["WARNING"],
     "The default level is WARNING, which means that only events of this level and above will be tracked, "
     "unless the logging package is configured to do otherwise.", "name", N),
    ("pl-2", "python-logging-howto", "If I log without configuring anything, which is the lowest severity that "
     "gets tracked?", ["WARNING"],
     "The default level is WARNING, which means that only events of this level and above will be tracked, "
     "unless the logging package is configured to do otherwise.", "name", "pl-1"),
    ("pl-3", "python-logging-howto", "Which handler should a library add to its top-level logger?", ["NullHandler"],
     "It is strongly advised that you do not add any handlers other than NullHandler to your library’s loggers.",
     "name", N),
    ("pl-4", "python-logging-howto", "What is the default value of raiseExceptions?", ["True"],
     "The default value of raiseExceptions is True.", "fact", N),
    ("pl-5", "python-logging-howto", "What is the numeric value of the TRACE level?", [], N, "unanswerable", N),
    ("pl-6", "python-logging-howto", "What should logging._srcfile be set to to avoid calling sys._getframe()?",
     ["None"], "Set logging._srcfile to None.", "fact", N),
    # ---------------------------------------------------------------- live manual (epub, 41K tokens)
    ("lm-1", "live-manual", "What is the default password of the live system user?", ["live"],
     "It is also possible to change the default username \"user\" and the default password \"live\".", "name", N),
    ("lm-2", "live-manual", "Which user name do you log in as by default on a live image?", ["user"],
     "It is also possible to change the default username \"user\" and the default password \"live\".", "name",
     "lm-1"),
    ("lm-3", "live-manual", "On which IRC channel can live-systems users and developers be found?",
     ["#debian-live"], "A number of users and developers are present in the #debian-live channel on "
     "irc.debian.org (OFTC).", "name", N),
    ("lm-4", "live-manual", "What volume label must a persistence overlay have?", ["persistence"],
     "The volume label for overlays must be persistence", "name", N),
    ("lm-5", "live-manual", "Which Linux kernel version is required for building live images?", ["2.6"],
     "Linux 2.6 or newer.", "number", N),
    ("lm-6", "live-manual", "How much free disk space is needed to build a live image?", [], N,
     "unanswerable", N),
    # ---------------------------------------------------------------- debian policy (epub, 111K tokens)
    ("dp-1", "debian-policy", "When was Debian Policy 4.6.2.0 released?", ["2022-12-17"],
     "This is Debian Policy version 4.6.2.0, released on 2022-12-17.", "number", N),
    ("dp-2", "debian-policy", "How long may a package's single-line synopsis be?", ["80 characters", "80"],
     "The single line synopsis should be kept brief—certainly under 80 characters.", "number", N),
    ("dp-3", "debian-policy", "With which line must debian/rules start?", ["#!/usr/bin/make -f"],
     "debian/rules must start with the line #!/usr/bin/make -f", "fact", N),
    ("dp-4", "debian-policy", "Which uid belongs to the user nobody?", ["65534"],
     "65534: User nobody.", "number", N),
    ("dp-5", "debian-policy", "Which numeric id is reserved for the account that owns nothing, nobody?", ["65534"],
     "65534: User nobody.", "number", "dp-4"),
    ("dp-6", "debian-policy", "Which program should a package call in its preinst to divert another package's "
     "file?", ["dpkg-divert"],
     "When a package wishes to divert a file from another, it should call dpkg-divert in its preinst to add the "
     "diversion and rename the existing file.", "name", N),
    ("dp-7", "debian-policy", "When was Debian Policy version 4.6.1 released?", ["May, 2022", "May 2022"],
     "10.3. Version 4.6.1 Released May, 2022.", "number", N),
    ("dp-8", "debian-policy", "How many packages does the main archive area contain?", [], N, "unanswerable", N),
    # ---------------------------------------------------------------- glib key-file API reference (html, 12K tokens)
    ("gk-1", "glib-keyfile", "Which character begins a comment in a GLib key file, unlike .ini files?", ["'#'", "#"],
     ".ini files use the ';' character to begin comments, key files use the '#' character.", "fact", N),
    ("gk-2", "glib-keyfile", "What happens when a group in a key file contains the same key several times?",
     ["the last entry wins", "last entry wins"],
     "Note that in contrast to the Desktop Entry Specification, groups in key files may contain the same key "
     "multiple times; the last entry wins.", "fact", N),
    ("gk-3", "glib-keyfile", "What is the default list separator of a GKeyFile?", ["';'", "semicolon"],
     "Sets the character which is used to separate values in lists. Typically ';' or ',' are used as separators. "
     "The default list separator is ';'.", "fact", N),
    ("gk-4", "glib-keyfile", "Unless I change it, which character splits the items when a value holds several of "
     "them?", ["';'", "semicolon"],
     "Sets the character which is used to separate values in lists. Typically ';' or ',' are used as separators. "
     "The default list separator is ';'.", "fact", "gk-3"),
    ("gk-5", "glib-keyfile", "Which error does g_key_file_load_from_file() return when the file does not exist?",
     ["G_FILE_ERROR_NOENT"],
     "This function will never return a G_KEY_FILE_ERROR_NOT_FOUND error. If the file is not found, "
     "G_FILE_ERROR_NOENT is returned.", "name", N),
    ("gk-6", "glib-keyfile", "What does g_key_file_to_data() do?", ["outputs key_file as a string", "as a string"],
     "This function outputs key_file as a string. Note that this function never reports an error, so it is safe "
     "to pass NULL as error .", "fact", N),
    ("gk-7", "glib-keyfile", "Which error is set when g_key_file_get_integer() finds a value that is not an integer?",
     ["G_KEY_FILE_ERROR_INVALID_VALUE"],
     "Likewise, if the value associated with key cannot be interpreted as an integer, or is out of range for a "
     "gint, then 0 is returned and error is set to G_KEY_FILE_ERROR_INVALID_VALUE.", "name", N),
    ("gk-8", "glib-keyfile", "Which flag should I load a key file with so that its comments survive when I write it "
     "back?", ["G_KEY_FILE_KEEP_COMMENTS"],
     "G_KEY_FILE_KEEP_COMMENTS | Use this flag if you plan to write the (possibly modified) contents of the key "
     "file back to a file; otherwise all comments will be lost when the key file is written back.", "option", N),
    ("gk-9", "glib-keyfile", "My program edits a config file with GLib and the remarks people wrote in it vanish "
     "when it saves; what should it pass when loading?", ["G_KEY_FILE_KEEP_COMMENTS"],
     "G_KEY_FILE_KEEP_COMMENTS | Use this flag if you plan to write the (possibly modified) contents of the key "
     "file back to a file; otherwise all comments will be lost when the key file is written back.", "option", "gk-8"),
    ("gk-10", "glib-keyfile", "What is the name of the main group of a desktop entry file "
     "(G_KEY_FILE_DESKTOP_GROUP)?", ["Desktop Entry"],
     "#define G_KEY_FILE_DESKTOP_GROUP \"Desktop Entry\" The name of the main group of a desktop entry file, as "
     "defined in the Desktop Entry Specification.", "name", N),
    ("gk-11", "glib-keyfile", "Since which GLib version is G_KEY_FILE_DESKTOP_KEY_ACTIONS available?", ["2.38"],
     "A key under G_KEY_FILE_DESKTOP_GROUP, whose value is a string list giving the available application actions. "
     "Since: 2.38", "number", N),
    ("gk-12", "glib-keyfile", "What is the maximum length of a key name in a GKeyFile?", [], N, "unanswerable", N),
    # ---------------------------------------------------------------- An Introduction to R (pdf, 54K tokens, 113 pages)
    ("ri-1", "r-intro", "About how many packages are supplied with R itself?", ["about 25", "25"],
     "There are about 25 packages supplied with R (called “standard” and “recommended” packages)", "number", N),
    ("ri-2", "r-intro", "How long may a command line entered at the R console be?", ["4095 bytes", "4095"],
     "Command lines entered at the console are limited3 to about 4095 bytes (not characters).", "number", N),
    ("ri-3", "r-intro", "Which R function diverts all subsequent console output to a file?", ["sink"],
     "The function sink, > sink(\"record.lis\") will divert all subsequent output from the console to an external "
     "file, record.lis.", "name", N),
    ("ri-4", "r-intro", "How can I have everything R prints go into a file rather than appear on my screen?",
     ["sink"],
     "The function sink, > sink(\"record.lis\") will divert all subsequent output from the console to an external "
     "file, record.lis.", "name", "ri-3"),
    ("ri-5", "r-intro", "At which position on the search path does attach() place a data frame?", ["position 2"],
     "places the data frame in the search path at position 2", "number", N),
    ("ri-6", "r-intro", "Which environment variable gives the location of R's site initialization file?",
     ["R_PROFILE"],
     "The location of the site initialization file is taken from the value of the R_PROFILE environment variable.",
     "name", N),
    ("ri-7", "r-intro", "Which link is the default for the binomial family in glm()?", ["logit"],
     "Since the logit link is the default the parameter may be omitted on the second call.", "name", N),
    ("ri-8", "r-intro", "How many points does locator() wait for by default?", ["512"],
     "This continues until n (default 512) points have been selected, or another mouse button is pressed.",
     "number", N),
    ("ri-9", "r-intro", "Which R command-line option combines --no-save, --no-environ, --no-site-file, "
     "--no-init-file and --no-restore?", ["--vanilla"],
     "--vanilla Combine --no-save, --no-environ, --no-site-file, --no-init-file and --no-restore.", "option", N),
    ("ri-10", "r-intro", "How do I start R completely fresh, ignoring every profile and neither loading nor keeping "
     "the workspace?", ["--vanilla"],
     "--vanilla Combine --no-save, --no-environ, --no-site-file, --no-init-file and --no-restore.", "option", "ri-9"),
    ("ri-11", "r-intro", "What is the largest value --max-ppsize accepts?", ["100000"],
     "Currently the maximum value accepted is 100000.", "number", N),
    ("ri-12", "r-intro", "What does R CMD BATCH do?", ["Run R in batch mode", "batch mode"],
     "BATCH Run R in batch mode. Runs R --restore --save with possibly further options (see ?BATCH).", "fact", N),
    ("ri-13", "r-intro", "How can I type a Meta character in R's command-line editor if my terminal has no META key?",
     ["ESC"],
     "If your terminal does not have a META key enabled, you can still type Meta characters using two-character "
     "sequences starting with ESC.", "option", N),
    ("ri-14", "r-intro", "Which operator does R provide as its native pipe?", [], N, "unanswerable", N),
    # ---------------------------------------------------------------- ssh man page, read on stdin (man, 13K tokens)
    ("ssh-1", "ssh-man", "Which ssh option forces the use of IPv4 addresses only?", ["-4"],
     "-4 Forces ssh to use IPv4 addresses only.", "option", N),
    ("ssh-2", "ssh-man", "What is ssh's default escape character?", ["‘~’", "~"],
     "Sets the escape character for sessions with a pty (default: ‘~’).", "fact", N),
    ("ssh-3", "ssh-man", "Which ssh option connects to the target host through a jump host?", ["-J"],
     "-J destination Connect to the target host by first making a ssh connection to the jump host described by "
     "destination and then establishing a TCP forwarding to the ultimate destination from there.", "option", N),
    ("ssh-4", "ssh-man", "How do I log in to a machine I can only reach by hopping through another server first?",
     ["-J", "ProxyJump"],
     "-J destination Connect to the target host by first making a ssh connection to the jump host described by "
     "destination and then establishing a TCP forwarding to the ultimate destination from there.", "option", "ssh-3"),
    ("ssh-5", "ssh-man", "What does ssh -N do?", ["Do not execute a remote command", "not execute a remote command"],
     "-N Do not execute a remote command. This is useful for just forwarding ports.", "fact", N),
    ("ssh-6", "ssh-man", "How many -v options give ssh its maximum verbosity?", ["3"],
     "Multiple -v options increase the verbosity. The maximum is 3.", "number", N),
    ("ssh-7", "ssh-man", "Which file lists the public keys that are permitted for logging in?",
     ["~/.ssh/authorized_keys", "authorized_keys"],
     "The file ~/.ssh/authorized_keys lists the public keys that are permitted for logging in.", "name", N),
    ("ssh-8", "ssh-man", "How do I make ssh stop asking me to confirm the fingerprint of a server I connect to for the "
     "first time?", ["StrictHostKeyChecking"],
     "When connecting to a server for the first time, a fingerprint of the server's public key is presented to the "
     "user (unless the option StrictHostKeyChecking has been disabled).", "option", N),
    ("ssh-9", "ssh-man", "Which escape sequence disconnects an ssh session?", ["~."],
     "~. Disconnect.", "option", N),
    ("ssh-10", "ssh-man", "With which cipher is the sensitive part of a private key file encrypted when a passphrase "
     "is given?", ["AES-128"],
     "It is possible to specify a passphrase when generating the key which will be used to encrypt the sensitive "
     "part of this file using AES-128.", "name", N),
    ("ssh-11", "ssh-man", "Which exit status does ssh return when an error occurred?", ["255"],
     "ssh exits with the exit status of the remote command or with 255 if an error occurred.", "number", N),
    ("ssh-12", "ssh-man", "Which TCP port does ssh connect to when no port is given?", [], N, "unanswerable", N),
    # ---------------------------------------------------------------- Sinatra README (markdown, 18K tokens)
    ("sr-1", "sinatra-readme", "What is Sinatra?",
     ["quickly creating web applications in Ruby", "DSL"],
     "Sinatra is a [DSL](https://en.wikipedia.org/wiki/Domain-specific_language) for quickly creating web "
     "applications in Ruby with minimal effort:", "fact", N),
    ("sr-2", "sinatra-readme", "In which order does Sinatra match routes?",
     ["in the order they are defined", "order they are defined"],
     "Routes are matched in the order they are defined. The first route that matches the request is invoked.",
     "fact", N),
    ("sr-3", "sinatra-readme", "From which directory does Sinatra serve static files by default?",
     ["./public", "public"],
     "Static files are served from the `./public` directory.", "name", N),
    ("sr-4", "sinatra-readme", "With which algorithm is the session data in the cookie signed?", ["HMAC-SHA1"],
     "To improve security, the session data in the cookie is signed with a session secret using `HMAC-SHA1`.",
     "name", N),
    ("sr-5", "sinatra-readme", "How long is the session secret that Sinatra generates by default?",
     ["32 byte", "32"],
     "By default, a 32 byte secure random session secret is generated for you by Sinatra, but it will change with "
     "every restart of your application.", "number", N),
    ("sr-6", "sinatra-readme", "If I let the framework make up the key that signs my cookies, what happens to that "
     "key when the app is started again?", ["change with every restart", "it will change"],
     "By default, a 32 byte secure random session secret is generated for you by Sinatra, but it will change with "
     "every restart of your application.", "fact", "sr-5"),
    ("sr-7", "sinatra-readme", "Which method immediately stops a request within a filter or route?", ["halt"],
     "To immediately stop a request within a filter or route use: ```ruby halt ```", "name", N),
    ("sr-8", "sinatra-readme", "What does the lock setting do?",
     ["Places a lock around every request", "lock around every request"],
     "Places a lock around every request, only running processing on request per Ruby process concurrently.",
     "fact", N),
    ("sr-9", "sinatra-readme", "Which environment variable selects the environment a Sinatra app runs in?",
     ["APP_ENV"],
     "Environments can be set through the `APP_ENV` environment variable. The default value is `\"development\"`.",
     "name", N),
    ("sr-10", "sinatra-readme", "Which Rack server does ruby myapp.rb use by default?", ["puma"],
     "-s # specify rack server/handler (default is puma)", "name", N),
    ("sr-11", "sinatra-readme", "Which Ruby versions are no longer supported as of Sinatra 3.0.0?",
     ["before 2.6", "2.6"],
     "Versions of Ruby before 2.6 are no longer supported as of Sinatra 3.0.0.", "number", N),
    ("sr-12", "sinatra-readme", "What is the largest request body Sinatra accepts by default?", [], N,
     "unanswerable", N),
]


# Extra verbatim lines that, with the passage, carry the answer (e.g. a NEWS entry under its release header).
SUPPORT = {
    "cn-2": ["b2sum is added to support the BLAKE2 digest algorithm"],
    "cn-3": ["numfmt: reformat numbers"],
    "cn-7": ["* readlink: new program"],
}


def locate(doc_id: str, kind: str, path: str, passage: str, stdin: bool = False) -> dict:
    want = squash(passage)
    if kind in ("man", "changelog", "text", "markdown"):
        lines = open(path, encoding="utf-8").read().split("\n")
        # the first line from which the squashed rest of the file starts with the passage's first words
        head = " ".join(want.split()[:6])
        for i in range(len(lines)):
            window = squash(" ".join(lines[i: i + 8]))
            if head in window and head not in squash(" ".join(lines[i + 1: i + 9])):
                return {"line": i + 1}
        return {}
    for idx, (where, text) in enumerate(passages(path, stdin), start=1):
        if want in squash(text):
            if kind == "pdf":
                from pypdf import PdfReader

                m = re.match(r"p\. (\S+)", where)
                labels = list(PdfReader(path).page_labels)
                page = labels.index(m.group(1)) + 1 if m and m.group(1) in labels else None
                return {"page": page, "page_label": m.group(1) if m else None}
            return {"section": re.sub(r"^(§|ch\. \d+ ·) ", "", where).replace("¶", "").strip()}
    return {}


def main() -> int:
    table = {d[0]: d for d in doc_rows()}
    out = []
    seen = set()
    for qid, doc, question, answers, passage, kind, para in Q:
        assert qid not in seen, qid
        seen.add(qid)
        _, fname, dkind, _, _, opts = table[doc]
        where = locate(doc, dkind, doc_path(fname), passage, opts["stdin"]) if passage else {}
        out.append({"id": qid, "doc": doc, "question": question, "answers": answers, "passage": passage,
                    "where": where, "kind": kind, "paraphrase_of": para})
        if qid in SUPPORT:
            out[-1]["support"] = SUPPORT[qid]
    write_json(f"{HERE}/questions.json", out)
    print(f"{len(out)} questions", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
