#!/bin/sh
# Lint every man page with mandoc; any warning fails.
: "${top_srcdir:=$(cd "$(dirname "$0")/.." && pwd)}"
command -v mandoc >/dev/null || { echo "mandoc not installed (apt-get install mandoc)"; exit 1; }
status=0
for page in "$top_srcdir"/man/man*/*.[0-9]; do
  out=$(mandoc -Tlint -W warning "$page" 2>&1) || { echo "$out"; status=1; }
done
# Every public function is named (.Nm) by some section 3 page.
for fn in $(sed -n 's/^RLX_API [^(]*[ *]\(rlx_[a-z0-9_]*\)(.*/\1/p' "$top_srcdir"/include/rlxcoll/*.h); do
  grep -q "^\.Nm $fn\( ,\)\{0,1\}$" "$top_srcdir"/man/man3/*.3 ||
    { echo "no man page names $fn"; status=1; }
done
n=$(ls "$top_srcdir"/man/man*/*.[0-9] | wc -l)
[ $status -eq 0 ] && echo "man pages: $n linted clean"
exit $status
