#!/usr/bin/env zsh
# Prints the matches zsh's completion offers for LINE<TAB>, one per line (sorted, unique), by
# typing LINE and TAB into an interactive zsh on a pseudo-terminal.
# Usage: complete.zsh FPATH_DIR LINE  (FPATH_DIR holds the _gpurun script under test)
emulate -L zsh
zmodload zsh/zpty || exit 2
fpath_dir=$1 line=$2
matches=$(mktemp) || exit 2
output=

# Reads the terminal until the pattern shows, for at most 20 s.
await() {
  local chunk
  integer deadline=$(( SECONDS + 20 ))
  while (( SECONDS < deadline )) && [[ $output != $~1 ]]; do
    zpty -r -t shell chunk && output+=$chunk || sleep 0.02
  done
  [[ $output == $~1 ]] || { print -u2 "zsh did not answer: $output"; exit 2; }
  output=
}
# Runs a command and waits for the next prompt: zsh drops what is typed before its line editor starts.
run() {
  zpty -w shell "$1"
  await '*<ready-'$((++sent))'>*'
}
integer sent=0

zpty shell zsh -f -i
run "setopt promptsubst; integer prompts=0; PROMPT='<ready-\$((++prompts))>' RPROMPT=''"  # the first prompt of ours
run "fpath=(${(q)fpath_dir} \$fpath); autoload -U compinit && compinit -u -D"
# complete-word: no menus. Every match zsh would offer also goes to the file.
run "bindkey '^I' complete-word; compadd() { local -a m; if [[ \${(j: :)@} != *' -'[OAD]' '* ]]; then builtin compadd -O m \"\$@\"; (( \$#m )) && print -rl -- \$m >> ${(q)matches}; fi; builtin compadd \"\$@\"; }"
# The line and TAB, then (read once completion is done) clear the line and print a mark.
zpty -w shell "$line"$'\t\C-e\C-u''print -r -- COMPLETION-DONE'
await $'*COMPLETION-DONE\r*'
zpty -d shell
sort -u $matches
rm -f $matches
