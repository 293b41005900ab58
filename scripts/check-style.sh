#!/bin/sh
# Style gate for the C sources, run by ctest as lint/style:
#  1. src/ calls none of the banned unbounded or locale-dependent functions
#     (sprintf, vsprintf, strcpy, strcat, strncpy, strtok, sscanf, atoi,
#     atol, gets) outside comments and string literals;
#  2. clang-format (with the repository's .clang-format) would change no
#     file under src/, tests/unit/ or fuzz/.
# Usage: scripts/check-style.sh [repository root]. Exits 0 when clean, 1 on
# a violation, 2 when a tool is missing. CLANG_FORMAT overrides the
# formatter, STYLE_GCC the gcc used to strip comments.
set -u

root=${1:-$(dirname "$0")/..}
cd "$root" || exit 2

banned='sprintf|vsprintf|strcpy|strcat|strncpy|strtok|sscanf|atoi|atol|gets'
status=0

if [ -z "${CLANG_FORMAT:-}" ]; then
    for cand in clang-format-14 clang-format; do
        if command -v "$cand" >/dev/null 2>&1; then
            CLANG_FORMAT=$cand
            break
        fi
    done
fi
if [ -z "${CLANG_FORMAT:-}" ]; then
    echo "check-style: clang-format not found" >&2
    exit 2
fi
# GCC's preprocessor strips comments without expanding anything (clang's
# has no -fpreprocessed).
cc=${STYLE_GCC:-gcc}
if ! command -v "$cc" >/dev/null 2>&1; then
    echo "check-style: gcc ($cc) not found; it strips comments before the scan" >&2
    exit 2
fi

# The files to check: tracked and new, not ignored.
files() {
    if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
        git ls-files --cached --others --exclude-standard -- "$@"
    else
        find "$@" -type f 2>/dev/null
    fi
}

# 1. Banned functions. The compiler's preprocessor in -fpreprocessed mode
# drops comments without expanding macros; its line markers keep the
# reported line numbers true. String and character literals are blanked
# so a message that names a function does not count.
for f in $(files src | grep -E '\.[ch]$'); do
    [ -f "$f" ] || continue
    "$cc" -x c -fpreprocessed -dD -E "$f" 2>/dev/null |
        awk -v file="$f" -v pat="(^|[^A-Za-z0-9_.>])($banned)[ \t]*\\(" '
            /^# [0-9]+ "/ { line = $2; next }
            {
                # Blank string and character literals, character by
                # character so quotes inside either are handled.
                s = ""
                q = ""
                n = length($0)
                for (i = 1; i <= n; i++) {
                    c = substr($0, i, 1)
                    if (q != "") {
                        if (c == "\\") {
                            i++
                        } else if (c == q) {
                            s = s c
                            q = ""
                        }
                        continue
                    }
                    if (c == "\"" || c == "\047")
                        q = c
                    s = s c
                }
                while (match(s, pat)) {
                    name = substr(s, RSTART, RLENGTH)
                    s = substr(s, RSTART + RLENGTH)
                    sub(/^[^A-Za-z_]/, "", name)
                    sub(/[ \t]*\($/, "", name)
                    printf "%s:%d: banned function %s\n", file, line, name
                    bad = 1
                }
                line++
            }
            END { exit bad }' || status=1
done

# 2. Formatting.
fmt_files=$(files src tests/unit fuzz | grep -E '\.[ch]$')
if [ -n "$fmt_files" ]; then
    # shellcheck disable=SC2086 # one word per path; paths have no spaces
    if ! "$CLANG_FORMAT" --dry-run -Werror --style=file $fmt_files; then
        echo "check-style: run '$CLANG_FORMAT -i' on the files above" >&2
        status=1
    fi
fi

if [ "$status" -eq 0 ]; then
    echo "check-style: ok"
fi
exit "$status"
