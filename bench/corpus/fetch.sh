#!/usr/bin/env bash
# Build bench/corpus/docs from Debian (bookworm) packages, without installing anything system-wide.
#   apt-get download PKG  -> debs/   (skipped when a .deb of that package is already there)
#   dpkg-deb -x           -> root/
#   copy / gunzip / render man pages -> docs/
# Idempotent: re-running only fills in what is missing. FORCE=1 re-renders every document.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
. "$HERE/fetch_lib.sh"  # fetch_deb, copy, man_txt, man_nh_txt, write_versions (bench/testset's fetch.sh uses them too)

PACKAGES=(bash bash-doc coreutils gzip tar rsync vim-runtime python3.11-doc debian-policy live-manual-epub
          libglib2.0-doc r-doc-pdf openssh-client ruby-sinatra)

for pkg in "${PACKAGES[@]}"; do
  fetch_deb "$pkg"
done

# Already installed on this machine
copy /usr/share/doc/libtasn1-doc/libtasn1.pdf                  libtasn1.pdf
copy /usr/share/doc/shared-mime-info/shared-mime-info-spec.pdf shared-mime-info-spec.pdf
copy /usr/share/doc/base-passwd/users-and-groups.html          users-and-groups.html

# From downloaded packages
copy "$ROOT/usr/share/doc/python3.11/html/library/argparse.html"     python-argparse.html
copy "$ROOT/usr/share/doc/python3.11/html/howto/logging.html"        python-logging-howto.html
copy "$ROOT/usr/share/doc/bash/bashref.html"                         bashref.html
copy "$ROOT/usr/share/doc/live-manual/epub/live-manual.en.epub"      live-manual.en.epub
copy "$ROOT/usr/share/doc/debian-policy/policy.epub"                 debian-policy.epub
man_txt "$ROOT/usr/share/man/man1/bash.1.gz"   bash.1.txt
man_txt "$ROOT/usr/share/man/man1/rsync.1.gz"  rsync.1.txt
man_txt "$ROOT/usr/share/man/man1/tar.1.gz"    tar.1.txt
man_txt "$ROOT/usr/share/man/man1/gzip.1.gz"   gzip.1.txt
copy "$ROOT/usr/share/doc/gzip/changelog.Debian.gz"   gzip-changelog.Debian.txt
copy "$ROOT/usr/share/doc/coreutils/NEWS.gz"          coreutils-NEWS.txt
copy "$ROOT/usr/share/vim/vim90/doc/usr_02.txt"       vim-usr_02.txt
copy "$ROOT/usr/share/vim/vim90/doc/usr_41.txt"       vim-usr_41.txt
copy "$ROOT/usr/share/doc/libglib2.0-doc/glib/glib-Key-value-file-parser.html"  glib-keyfile.html
copy "$ROOT/usr/share/doc/r-doc-pdf/manual/R-intro.pdf"  R-intro.pdf
man_nh_txt "$ROOT/usr/share/man/man1/ssh.1.gz"         ssh.1.txt
copy "$ROOT/usr/share/doc/ruby-sinatra/README.md.gz"  sinatra-README.md

# Package versions, for the README and corpus.json
write_versions libtasn1-doc shared-mime-info base-passwd

ls -la "$DOCS"
du -sh "$HERE"
