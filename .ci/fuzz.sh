#!/usr/bin/env bash
# Runs every Go fuzz target in the repo for FUZZTIME each (default 10s), over the
# committed corpus (testdata/fuzz) plus whatever the fuzzer finds in that time.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime=${FUZZTIME:-10s}
grep -rE '^func Fuzz[A-Za-z0-9_]*\(' --include='*_test.go' . | grep -v '^./integration/' |
	sed -E 's#^\./(.*)/[^/]*_test\.go:func (Fuzz[A-Za-z0-9_]*)\(.*#\1 \2#' | sort -u |
	while read -r dir name; do
		echo "fuzz ./$dir $name ($fuzztime)"
		go test "./$dir" -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime"
	done
