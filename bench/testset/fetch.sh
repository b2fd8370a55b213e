#!/usr/bin/env bash
# Build bench/testset/docs from Debian (bookworm) packages, without installing anything system-wide
# (the same steps as bench/corpus/fetch.sh):
#   apt-get download PKG=VERSION -> debs/   (skipped when a .deb of that package is already there; the pinned
#                                            version first, else the archive's current one, with a warning)
#   dpkg-deb -x                  -> root/
#   copy / gunzip / render man pages -> docs/
# Idempotent: re-running only fills in what is missing. FORCE=1 re-renders every document.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
DEBS="$HERE/debs"; ROOT="$HERE/root"; DOCS="$HERE/docs"
mkdir -p "$DEBS" "$ROOT" "$DOCS"

# package=version the questions were written against (README.md's table)
PACKAGES=(debian-history=2.28 libidn2-doc=2.3.3-1 lintian=2.116.3+deb12u1 sqlite3-doc=3.40.1-2+deb12u2
          xz-utils=5.4.1-1+deb12u2 findutils=4.9.0-4 grep=3.8-5
          vim-runtime=2:9.0.1378-2+deb12u2 puma=5.6.5-3+deb12u2)

quiet() { grep -v '^W: Download is performed unsandboxed' || true; }

for spec in "${PACKAGES[@]}"; do
  pkg="${spec%%=*}"
  if ! ls "$DEBS"/"${pkg}"_*.deb >/dev/null 2>&1; then
    if ! (cd "$DEBS" && apt-get download "$spec" 2>&1 | quiet; exit "${PIPESTATUS[0]}"); then
      echo "WARNING: $spec is no longer in the archive; taking the current $pkg (run verify.py)" >&2
      (cd "$DEBS" && apt-get download "$pkg" 2>&1 | quiet)
    fi
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

man_txt() {  # man_txt SRC(.gz) DEST_NAME: plain text, no hyphenation, left-adjusted, ASCII hyphens (as the corpus)
  local src="$1" dest="$2"
  need "$dest" || return 0
  zcat -f "$src" | groff -man -Tutf8 -P-c -rHY=0 -dAD=l 2>/dev/null | col -bx > "$DOCS/$dest.tmp"
  mv "$DOCS/$dest.tmp" "$DOCS/$dest"
}

man_nh_txt() {  # man_nh_txt SRC(.gz) DEST_NAME: for a page that switches hyphenation back on itself (xargs.1 has
  # .hy; like the corpus's mdoc_txt for ssh.1): hyphenation off and the .hy request made a no-op.
  local src="$1" dest="$2"
  need "$dest" || return 0
  { printf '.nh\n.de hy\n..\n'; zcat -f "$src"; } | groff -man -Tutf8 -P-c -rHY=0 -dAD=l 2>/dev/null | col -bx \
    > "$DOCS/$dest.tmp"
  mv "$DOCS/$dest.tmp" "$DOCS/$dest"
}

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
: > "$HERE/versions.txt.tmp"
for deb in "$DEBS"/*.deb; do
  dpkg-deb -f "$deb" Package Version | paste -sd' ' >> "$HERE/versions.txt.tmp"
done
mv "$HERE/versions.txt.tmp" "$HERE/versions.txt"

ls -la "$DOCS"
du -sh "$HERE"
