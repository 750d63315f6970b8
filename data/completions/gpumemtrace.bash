# bash completion for gpumemtrace(1). Installed as
# PREFIX/share/bash-completion/completions/gpumemtrace (bash-completion loads it on first use),
# or source it from ~/.bashrc. The option lists follow each command's --help (tests/install
# checks that they do).

_gpumemtrace_traces()
{
	# trace files and the directories that hold them
	local IFS=$'\n'
	COMPREPLY=($(compgen -d -- "$1") $(compgen -f -X '!*.@(jsonl|jsonl.zst|jsonl.gz|json|pickle)' -- "$1"))
	compopt -o filenames 2>/dev/null
}

_gpumemtrace()
{
	local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
	local cmd="" i

	for ((i = 1; i < COMP_CWORD; i++)); do
		case ${COMP_WORDS[i]} in
		run | report | check | diff | summarize | live) cmd=${COMP_WORDS[i]}; break ;;
		esac
	done
	if [[ -z $cmd ]]; then
		COMPREPLY=($(compgen -W 'run report check diff summarize live -h --help -V --version' -- "$cur"))
		return
	fi

	case $cmd in
	run)
		# the first word that is not an option (or follows --) is the command: complete it,
		# and its own arguments, as bash would without us
		local j=$((i + 1))
		while ((j < COMP_CWORD)); do
			case ${COMP_WORDS[j]} in
			-o | --output) j=$((j + 2)) ;;
			--) j=$((j + 1)); break ;;
			-*) j=$((j + 1)) ;;
			*) break ;;
			esac
		done
		if ((j < COMP_CWORD)) || { ((j == COMP_CWORD)) && [[ $cur != -* ]] &&
			[[ $prev != -o && $prev != --output ]]; }; then
			if ((j == COMP_CWORD)); then
				COMPREPLY=($(compgen -c -- "$cur"))
			elif declare -F _command_offset >/dev/null; then
				_command_offset "$j"
			else
				COMPREPLY=($(compgen -f -- "$cur"))
				compopt -o filenames 2>/dev/null
			fi
			return
		fi
		case $prev in
		-o | --output)
			COMPREPLY=($(compgen -d -- "$cur"))
			compopt -o filenames 2>/dev/null
			return
			;;
		esac
		COMPREPLY=($(compgen -W '-o --output -h --help -V --version --' -- "$cur"))
		;;
	report)
		case $prev in
		-f | --format) COMPREPLY=($(compgen -W 'text json folded html perfetto pytorch-snapshot csv' -- "$cur")); return ;;
		-s | --stack) COMPREPLY=($(compgen -W 'site full' -- "$cur")); return ;;
		-w | --weight) COMPREPLY=($(compgen -W 'peak leaked allocated' -- "$cur")); return ;;
		--from | --to) return ;; # seconds or a marker's label
		-o | --output | --categories)
			COMPREPLY=($(compgen -f -- "$cur"))
			compopt -o filenames 2>/dev/null
			return
			;;
		esac
		if [[ $cur == -* ]]; then
			COMPREPLY=($(compgen -W '-f --format -s --stack -w --weight --from --to
				--categories --ranks -o --output -h --help -V --version' -- "$cur"))
		else
			_gpumemtrace_traces "$cur"
		fi
		;;
	check)
		case $prev in
		--max-leaked-bytes | --max-leaked-allocs | --max-peak-bytes | --max-growth-bytes | \
			--max-failed | --max-tensor-leak | --max-tensor-growth | --max-fragmentation | \
			--max-increase)
			return
			;;
		--baseline | --suppressions | --junit)
			COMPREPLY=($(compgen -f -- "$cur"))
			compopt -o filenames 2>/dev/null
			return
			;;
		esac
		if [[ $cur == -* ]]; then
			COMPREPLY=($(compgen -W '--max-leaked-bytes --max-leaked-allocs --max-peak-bytes
				--max-growth-bytes --max-failed --max-tensor-leak --max-tensor-growth
				--max-fragmentation --baseline --max-increase --suppressions
				--count-cached --count-libraries --no-default-suppressions --allow-incomplete --allow-drops
				--junit -q --quiet -h --help -V --version' -- "$cur"))
		else
			_gpumemtrace_traces "$cur"
		fi
		;;
	diff)
		case $prev in
		-f | --format) COMPREPLY=($(compgen -W 'text json' -- "$cur")); return ;;
		-n | --top) return ;;
		esac
		if [[ $cur == -* ]]; then
			COMPREPLY=($(compgen -W '-f --format -n --top -h --help -V --version' -- "$cur"))
		else
			_gpumemtrace_traces "$cur"
		fi
		;;
	summarize)
		case $prev in
		-o | --output)
			COMPREPLY=($(compgen -d -- "$cur"))
			compopt -o filenames 2>/dev/null
			return
			;;
		--clock-uncertainty) return ;; # seconds
		esac
		if [[ $cur == -* ]]; then
			COMPREPLY=($(compgen -W '-o --output --clock-uncertainty -h --help -V --version' -- "$cur"))
		else
			_gpumemtrace_traces "$cur"
		fi
		;;
	live)
		case $prev in
		-i | --interval | -n | --top) return ;;
		esac
		if [[ $cur == -* ]]; then
			COMPREPLY=($(compgen -W '--once -i --interval -n --top --bytes --no-symbols
				-h --help -V --version' -- "$cur"))
		else
			_gpumemtrace_traces "$cur"
		fi
		;;
	esac
}
complete -F _gpumemtrace gpumemtrace
