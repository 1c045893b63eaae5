# bash completion for raidctl(8).  Installed by make install as
# raidctl in bash-completion's completions directory.
#
# The verbs, each verb's options and which of them take a value come from
# raidctl itself ("raidctl help", "raidctl help VERB"), so they never drift
# from the program: an option written "--level 0|1|5|10" completes to those
# values, one taking a MEMBER or PATH to file names.  The first operand of
# a verb that names a running array (detail NAME, scrub NAME, ...) completes
# to the arrays raidd serves now ("raidctl status --json", through the
# --control socket given on the line); other operands complete to paths
# (members: block devices, image files).

# The usage forms of raidctl (no VERB) or of VERB, one per line.
_raidctl_usage()
{
    "$1" help ${2:+"$2"} 2>/dev/null | sed -n -e 's/^usage: raidctl //p' \
        -e 's/^       raidctl //p' -e 's/^  \([a-z]\)/\1/p'
}

# The names of the arrays raidd runs.
_raidctl_arrays()
{
    "$1" "${@:2}" status --json 2>/dev/null |
        grep -o '"name": *"[^"]*"' | sed -e 's/.*"\([^"]*\)"$/\1/'
}

_raidctl()
{
    local cur prev words cword
    _init_completion -n = || return

    local prog=${words[0]} i verb= vi=0 ctl=()
    # The global options before the verb, and the verb.
    for (( i = 1; i < cword; i++ )); do
        case ${words[i]} in
            --control) ctl=(--control "${words[i+1]}"); (( i++ )) ;;
            --control=*) ctl=("${words[i]}") ;;
            -*) ;;
            *) verb=${words[i]}; vi=$i; break ;;
        esac
    done
    if [[ -z $verb ]]; then
        if [[ $prev == --control ]]; then
            _filedir
        elif [[ $cur == -* ]]; then
            COMPREPLY=($(compgen -W '--control --json --verbose --help' -- "$cur"))
        else
            COMPREPLY=($(compgen -W "$(_raidctl_usage "$prog" | awk '{ print $1 }' | sort -u)" -- "$cur"))
        fi
        return
    fi

    local usage opts valued
    usage=$(_raidctl_usage "$prog" "$verb")
    [[ -n $usage ]] || { _filedir; return; }
    opts=$(grep -o -e '--[a-z][a-z-]*' <<<"$usage" | sort -u)
    # "--opt VALUE" in the usage: --opt takes a value (VALUE names it);
    # not "[--repair | --stop]".
    valued=$(grep -o -e '--[a-z][a-z-]* [^][ |-][^] ]*' <<<"$usage" | sort -u)

    if [[ $prev == --* ]]; then
        local v
        v=$(awk -v o="$prev" '$1 == o { print $2; exit }' <<<"$valued")
        if [[ -n $v ]]; then
            case $v in
                *'|'*) COMPREPLY=($(compgen -W "${v//|/ }" -- "$cur")) ;;
                MEMBER|PATH|FILE) _filedir ;;
            esac
            return
        fi
    fi
    if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "$opts --help" -- "$cur"))
        [[ ${COMPREPLY-} == *= ]] && compopt -o nospace
        return
    fi
    if [[ $verb == help ]]; then
        COMPREPLY=($(compgen -W "$(_raidctl_usage "$prog" | awk '{ print $1 }' | sort -u)" -- "$cur"))
        return
    fi

    # Which operand is being completed: the words after the verb that are
    # neither options nor an option's value.
    local n=0 w all=
    for (( i = vi + 1; i < cword; i++ )); do
        w=${words[i]}
        if [[ $w == --* ]]; then
            [[ $w == --all || $w == --scan ]] && all=1
            [[ $w != *=* ]] && awk -v o="$w" '$1 == o { f = 1 } END { exit !f }' <<<"$valued" &&
                (( i++ ))
            continue
        fi
        (( n++ ))
    done
    # NAME first: the verbs whose usage begins "VERB NAME" or "VERB [NAME]".
    if (( n == 0 )) && [[ -z $all ]] &&
        grep -q -e "^$verb \[\?NAME" <<<"$usage"; then
        case $verb in
            create|assemble) ;;          # a new name, or the superblocks'
            *) COMPREPLY=($(compgen -W "$(_raidctl_arrays "$prog" "${ctl[@]}")" -- "$cur")) ;;
        esac
        return
    fi
    if [[ $verb == set ]]; then
        COMPREPLY=($(compgen -W 'rebuild-min= rebuild-max= bitmap= bitmap-chunk= safe-mode-delay=' -- "$cur"))
        compopt -o nospace
        return
    fi
    _filedir
} &&
    complete -F _raidctl raidctl
