#!/usr/bin/env bash
# Runs a bash completion script the way bash does on TAB, and prints COMPREPLY, one per line.
# Usage: complete.bash SCRIPT full|plain LINE
#   LINE is what was typed before the cursor. It is split into COMP_WORDS as readline splits it
#   (at spaces; '=' and ':' are words of their own, as in COMP_WORDBREAKS); no quoting.
#   full loads the bash-completion package first, as an interactive Debian shell does; plain does not.
script=$1 mode=$2 line=$3
if [[ $mode == full ]]; then
  source /usr/share/bash-completion/bash_completion || exit 2
fi
source "$script" || exit 2
alias_name=${GPURUN_COMPLETE_ALIAS-}
[[ -n $alias_name ]] && complete -F _gpurun "$alias_name"

COMP_WORDS=()
word=
for ((i = 0; i < ${#line}; i++)); do
  c=${line:i:1}
  case $c in
    ' ') [[ -n $word ]] && COMP_WORDS+=("$word"); word= ;;
    = | :) [[ -n $word ]] && COMP_WORDS+=("$word"); COMP_WORDS+=("$c"); word= ;;
    *) word+=$c ;;
  esac
done
# The word at the cursor: empty after a space; after '=' or ':' readline's current word is that character.
[[ -n $word || ${line: -1} == ' ' ]] && COMP_WORDS+=("$word")
COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
COMP_LINE=$line
COMP_POINT=${#line}
function=$(complete -p "${COMP_WORDS[0]##*/}" 2>/dev/null | sed -n 's/.*-F \([^ ]*\) .*/\1/p')
[[ -n $function ]] || { echo "no completion for ${COMP_WORDS[0]}" >&2; exit 2; }
"$function" "${COMP_WORDS[0]}" "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
((${#COMPREPLY[@]} == 0)) || printf '%s\n' "${COMPREPLY[@]}"
