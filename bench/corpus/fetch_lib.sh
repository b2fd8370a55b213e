# Functions for a fetch.sh that builds a folder's docs/ from Debian (bookworm) packages, without installing anything
# system-wide: bench/corpus/fetch.sh and bench/testset/fetch.sh source this file after setting HERE (their folder)
# and `set -euo pipefail`. It sets DEBS, ROOT, DOCS (HERE's debs/, root/, docs/) and makes them.
#   fetch_deb PKG[=VERSION]  apt-get download -> debs/ (skipped when a .deb of PKG is there), dpkg-deb -x -> root/
#   copy / man_txt / man_nh_txt SRC DEST_NAME   -> docs/DEST_NAME, only when missing (FORCE=1: every time)
#   write_versions [INSTALLED_PKG...]          -> versions.txt
DEBS="$HERE/debs"; ROOT="$HERE/root"; DOCS="$HERE/docs"
mkdir -p "$DEBS" "$ROOT" "$DOCS"

quiet() { grep -v '^W: Download is performed unsandboxed' || true; }

fetch_deb() {  # fetch_deb PKG[=VERSION]: with a VERSION, that one first, else (it has left the archive) the
  # archive's current PKG, with a warning; then extracted into root/ once (a stamp file per .deb)
  local spec="$1" pkg="${1%%=*}" deb stamp
  if ! ls "$DEBS"/"${pkg}"_*.deb >/dev/null 2>&1; then
    if [ "$spec" = "$pkg" ]; then
      (cd "$DEBS" && apt-get download "$pkg" 2>&1 | quiet || true)
    elif ! (cd "$DEBS" && apt-get download "$spec" 2>&1 | quiet; exit "${PIPESTATUS[0]}"); then
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
}

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

man_nh_txt() {  # man_nh_txt SRC(.gz) DEST_NAME: as man_txt, for a page that switches hyphenation back on itself
  # (a BSD mdoc page such as ssh.1 ignores -rHY=0; xargs.1 has .hy): hyphenation off and the .hy request a no-op
  local src="$1" dest="$2"
  need "$dest" || return 0
  { printf '.nh\n.de hy\n..\n'; zcat -f "$src"; } | groff -man -Tutf8 -P-c -rHY=0 -dAD=l 2>/dev/null | col -bx \
    > "$DOCS/$dest.tmp"
  mv "$DOCS/$dest.tmp" "$DOCS/$dest"
}

write_versions() {  # write_versions [INSTALLED_PKG...]: versions.txt, "Package: P Version: V" for every .deb in
  # debs/, then for each package named that is installed on this machine
  local deb pkg
  : > "$HERE/versions.txt.tmp"
  for deb in "$DEBS"/*.deb; do
    dpkg-deb -f "$deb" Package Version | paste -sd' ' >> "$HERE/versions.txt.tmp"
  done
  for pkg in "$@"; do
    dpkg-query -W -f='Package: ${Package} Version: ${Version}\n' "$pkg" >> "$HERE/versions.txt.tmp" 2>/dev/null || true
  done
  mv "$HERE/versions.txt.tmp" "$HERE/versions.txt"
}
