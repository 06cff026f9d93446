#!/usr/bin/env bash
# Every repository path the README and docs/ name (src/..., tests/..., scripts/..., docs/...,
# bench/..., policies/...) must exist, so a restructuring cannot leave the documentation
# pointing at files that moved. Usage: paths_exist.sh PROJECT_ROOT
set -euo pipefail
cd "$1"
missing=0
checked=0
while IFS=: read -r file line path; do
  path=${path%%[.,;:)]}
  path=${path%.}
  checked=$((checked + 1))
  # a path with a glob or placeholder names a pattern, not a file; a path inside a URL
  # (preceded by '/') is another project's and is not matched above
  case "$path" in *'*'*|*'<'*|*'N'.json|*NAME*) continue ;; esac
  # another project's path quoted in prose (rshim-user-space's src/rshim_pcie.c,
  # scripts/mlx-mkbfb): only src/<one of our rooms>/ and scripts/*.sh are ours
  case "$path" in
    src/*/*) [ -d "src/$(echo "$path" | cut -d/ -f2)" ] || continue ;;
    src/*) [ -d "$path" ] || [ -d "${path%/*}" ] && [ "${path%/*}" != src ] || continue ;;
    scripts/*) case "$path" in *.sh|scripts/) ;; *) continue ;; esac ;;
  esac
  if [ ! -e "$path" ]; then
    echo "$file:$line: names $path, which does not exist"
    missing=$((missing + 1))
  fi
done < <(grep -noE '(^|[^/A-Za-z0-9_.-])(src|tests|scripts|docs|bench|policies)/[A-Za-z0-9_./*<>-]*[A-Za-z0-9_*>/]' \
           README.md docs/*.md | sed -E 's/^([^:]*:[0-9]*:)[^a-z]?/\1/')
if [ "$missing" -ne 0 ]; then
  echo "paths_exist: $missing of $checked paths named in README.md and docs/ do not exist"
  exit 1
fi
echo "paths_exist: $checked paths named in README.md and docs/, all present"
