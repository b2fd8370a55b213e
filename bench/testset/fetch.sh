#!/usr/bin/env bash
# Build bench/testset/docs from Debian (bookworm) packages, without installing anything system-wide
# (the same steps as bench/corpus/fetch.sh, by its functions: bench/corpus/fetch_lib.sh):
#   apt-get download PKG=VERSION -> debs/   (skipped when a .deb of that package is already there; the pinned
#                                            version first, else the archive's current one, with a warning)
#   dpkg-deb -x                  -> root/
#   copy / gunzip / render man pages -> docs/
# Idempotent: re-running only fills in what is missing. FORCE=1 re-renders every document.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
. "$HERE/../corpus/fetch_lib.sh"  # bench/corpus's fetch_deb, copy, man_txt, man_nh_txt, write_versions

# package=version the questions were written against (README.md's table)
PACKAGES=(debian-history=2.28 libidn2-doc=2.3.3-1 lintian=2.116.3+deb12u1 sqlite3-doc=3.40.1-2+deb12u2
          xz-utils=5.4.1-1+deb12u2 findutils=4.9.0-4 grep=3.8-5
          vim-runtime=2:9.0.1378-2+deb12u2 puma=5.6.5-3+deb12u2)

for spec in "${PACKAGES[@]}"; do
  fetch_deb "$spec"
done

copy "$ROOT/usr/share/doc/debian-history/docs/project-history.en.pdf"  debian-history.pdf
copy "$ROOT/usr/share/doc/libidn2-doc/libidn2.pdf"                      libidn2.pdf
copy "$ROOT/usr/share/doc/lintian/lintian.html"                         lintian.html
copy "$ROOT/usr/share/doc/sqlite3/datatype3.html"                       sqlite-datatype3.html
man_txt "$ROOT/usr/share/man/man1/xz.1.gz"     xz.1.txt
man_nh_txt "$ROOT/usr/share/man/man1/xargs.1.gz"  xargs.1.txt
copy "$ROOT/usr/share/doc/grep/NEWS.gz"              grep-NEWS.txt
copy "$ROOT/usr/share/vim/vim90/doc/usr_10.txt"      vim-usr_10.txt
copy "$ROOT/usr/share/doc/puma/README.md.gz"         puma-README.md

# Package versions, for the README and corpus.json
write_versions

ls -la "$DOCS"
du -sh "$HERE"
