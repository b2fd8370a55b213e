#!/usr/bin/env bash
# Build bench/corpus/docs from Debian (bookworm) packages, without installing anything system-wide.
#   apt-get download PKG  -> debs/   (skipped when a .deb of that package is already there)
#   dpkg-deb -x           -> root/
#   copy / gunzip / render man pages -> docs/
# Idempotent: re-running only fills in what is missing. FORCE=1 re-renders every document.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
DEBS="$HERE/debs"; ROOT="$HERE/root"; DOCS="$HERE/docs"
mkdir -p "$DEBS" "$ROOT" "$DOCS"

PACKAGES=(bash bash-doc coreutils gzip tar rsync vim-runtime python3.11-doc debian-policy live-manual-epub
          libglib2.0-doc r-doc-pdf openssh-client ruby-sinatra)

for pkg in "${PACKAGES[@]}"; do
  if ! ls "$DEBS"/"${pkg}"_*.deb >/dev/null 2>&1; then
    (cd "$DEBS" && apt-get download "$pkg" 2>&1 | grep -v '^W: Download is performed unsandboxed' || true)
  fi
  deb=$(ls "$DEBS"/"${pkg}"_*.deb | head -1)
  stamp="$ROOT/.extracted.$(basename "$deb")"
  if [ ! -e "$stamp" ]; then
    dpkg-deb -x "$deb" "$ROOT"
    touch "$stamp"
  fi
done

need() { [ "${FORCE:-0}" = 1 ] || [ ! -s "$DOCS/$1" ]; }

copy() {  # copy SRC DEST_NAME (SRC absolute; .gz is decompressed)
  local src="$1" dest="$2"
  need "$dest" || return 0
  case "$src" in
    *.gz) zcat "$src" > "$DOCS/$dest.tmp" ;;
    *)    cp "$src" "$DOCS/$dest.tmp" ;;
  esac
  mv "$DOCS/$dest.tmp" "$DOCS/$dest"
}

man_txt() {  # man_txt SRC(.gz) DEST_NAME: plain text, no hyphenation, left-adjusted, ASCII hyphens
  local src="$1" dest="$2"
  need "$dest" || return 0
  zcat -f "$src" | groff -man -Tutf8 -P-c -rHY=0 -dAD=l 2>/dev/null | col -bx > "$DOCS/$dest.tmp"
  mv "$DOCS/$dest.tmp" "$DOCS/$dest"
}

mdoc_txt() {  # mdoc_txt SRC(.gz) DEST_NAME: a BSD mdoc page (e.g. ssh.1) as plain text. mdoc ignores -rHY=0 and
  # re-enables hyphenation itself, so hyphenation is switched off and the .hy request made a no-op.
  local src="$1" dest="$2"
  need "$dest" || return 0
  { printf '.nh\n.de hy\n..\n'; zcat -f "$src"; } | groff -man -Tutf8 -P-c -rHY=0 -dAD=l 2>/dev/null | col -bx \
    > "$DOCS/$dest.tmp"
  mv "$DOCS/$dest.tmp" "$DOCS/$dest"
}

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
mdoc_txt "$ROOT/usr/share/man/man1/ssh.1.gz"           ssh.1.txt
copy "$ROOT/usr/share/doc/ruby-sinatra/README.md.gz"  sinatra-README.md

# Package versions, for the README and corpus.json
: > "$HERE/versions.txt.tmp"
for deb in "$DEBS"/*.deb; do
  dpkg-deb -f "$deb" Package Version | paste -sd' ' >> "$HERE/versions.txt.tmp"
done
for pkg in libtasn1-doc shared-mime-info base-passwd; do
  dpkg-query -W -f='Package: ${Package} Version: ${Version}\n' "$pkg" >> "$HERE/versions.txt.tmp" 2>/dev/null || true
done
mv "$HERE/versions.txt.tmp" "$HERE/versions.txt"

ls -la "$DOCS"
du -sh "$HERE"
