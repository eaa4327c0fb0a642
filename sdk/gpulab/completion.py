"""Shell completion scripts made from the parser itself, so they list exactly the commands and flags there are:
`gpulab completion bash > ~/.local/share/bash-completion/completions/gpulab`, or `eval "$(gpulab completion zsh)"`.
"""

from __future__ import annotations

import argparse


def _tree(parser: argparse.ArgumentParser, path: str = "") -> dict[str, list[str]]:
    """Each command path ("", "jobs", "jobs submit") -> the words that may follow it."""
    words: list[str] = []
    tree: dict[str, list[str]] = {}
    for action in parser._actions:  # argparse keeps no public list of them
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                words.append(name)
                tree.update(_tree(child, f"{path} {name}".strip()))
        else:
            words.extend(action.option_strings)
            if action.choices and not action.option_strings:
                words.extend(str(c) for c in action.choices)
    tree[path] = sorted(set(words))
    return tree


def script(parser: argparse.ArgumentParser, shell: str) -> str:
    tree = _tree(parser)
    cases = "\n".join(f'        "{path}") words="{" ".join(words)}" ;;' for path, words in sorted(tree.items()))
    bash = f"""# bash completion for gpulab (gpulab completion bash)
_gpulab() {{
    local cur path="" word i
    cur="${{COMP_WORDS[COMP_CWORD]}}"
    for ((i = 1; i < COMP_CWORD; i++)); do
        word="${{COMP_WORDS[i]}}"
        [[ "$word" == -* ]] && continue
        case "$(_gpulab_words "${{path:+$path }}$word")" in "") ;; *) path="${{path:+$path }}$word" ;; esac
    done
    COMPREPLY=($(compgen -W "$(_gpulab_words "$path")" -- "$cur"))
}}
_gpulab_words() {{
    local words=""
    case "$1" in
{cases}
    esac
    echo "$words"
}}
complete -o default -F _gpulab gpulab
"""
    if shell == "bash":
        return bash
    return "autoload -U +X bashcompinit && bashcompinit\n" + bash
