#!/usr/bin/env bash
# Fetch the full article evaluation sets (internal/article/testdata holds
# all of scrapinghub's and a 145-page sample of htmldate's) into a cache
# folder outside the repository: ${ARTICLE_EVAL_CACHE:-~/.cache/portalwatch/article-eval}.
# Needs network access; CI and make eval-articles use the committed sample.
set -euo pipefail
cache=${ARTICLE_EVAL_CACHE:-$HOME/.cache/portalwatch/article-eval}
mkdir -p "$cache"
fetch() { # repo commit
	local dir="$cache/${1##*/}"
	[ -d "$dir/.git" ] || git clone --quiet "https://github.com/$1" "$dir"
	git -C "$dir" fetch --quiet origin "$2" && git -C "$dir" checkout --quiet "$2"
	echo "$1 at $2 in $dir"
}
fetch scrapinghub/article-extraction-benchmark 4a3bc979f76c0df73cb95fe272e2fc1b96f9f010
fetch adbar/htmldate b8952828329abaeeb3be21387b526f2be614ce67
