#!/usr/bin/env bash
# Measure two revisions of portalwatch against each other on this machine:
# each is checked out into a temporary git worktree, built once, and run by
# the same pwbench e2e in turn (A B, B A, ...), so that every figure comes
# out as the ratio B/A of runs made side by side, with its spread.
#
#   scripts/bench-ab.sh PWBENCH A [B] [PAIRS] [-- pwbench e2e flags...]
#
# A and B are any git revisions (B defaults to HEAD); PAIRS defaults to 3.
# `make bench-ab A=... B=...` calls it. The worktrees are removed at the end,
# whatever happens.
set -euo pipefail

usage() {
	echo "usage: make bench-ab A=<revision> [B=<revision, default HEAD>] [AB_PAIRS=3] [AB_FLAGS='pwbench e2e flags']" >&2
	exit 2
}
[[ $# -ge 2 && -n $2 ]] || usage
pwbench=$1 a=$2 b=${3:-HEAD} pairs=${4:-3}
shift $(($# < 4 ? $# : 4))
[[ ${1:-} == -- ]] && shift
[[ $pairs =~ ^[1-9][0-9]*$ ]] || usage

root=$(git rev-parse --show-toplevel)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/pwbench-ab-XXXXXX")
cleanup() {
	for arm in a b; do
		[[ -d $tmp/$arm ]] && git -C "$root" worktree remove --force "$tmp/$arm" 2>/dev/null
	done
	rm -rf "$tmp"
}
trap cleanup EXIT

for arm in a b; do
	rev=$a
	[[ $arm == b ]] && rev=$b
	commit=$(git -C "$root" rev-parse --verify --quiet "$rev^{commit}") || {
		echo "bench-ab: $rev is not a revision of this repository" >&2
		exit 2
	}
	git -C "$root" worktree add --detach --quiet "$tmp/$arm" "$commit"
	echo "bench-ab: ${arm^^} = $rev ($(git -C "$root" log -1 --format='%h %s' "$commit" | cut -c1-72))"
done

# The farm, the corpus and the harness are this checkout's, the programs
# each revision's own.
"$pwbench" ab -a "$tmp/a" -b "$tmp/b" -repo "$root" -pairs "$pairs" "$@"
