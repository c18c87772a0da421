# shellcheck shell=bash
# Shared by the action's scripts (sourced, not run): messages in GitHub's workflow-command form
# and step outputs. The scripts read only their own environment: action.yml passes every input
# as a variable, never through `${{ }}` inside a script, so no input becomes shell code.

# error MESSAGE: an annotation on the run, then exit 2 (a usage or configuration error).
fail() {
  echo "::error title=goldgate action::$*" >&2
  exit 2
}

note() {
  echo "::notice title=goldgate action::$*"
}

# output NAME VALUE: a step output (one line; the values here never hold a newline).
output() {
  case "$2" in *$'\n'*) fail "output $1 holds a newline" ;; esac
  echo "$1=$2" >> "${GITHUB_OUTPUT:?GITHUB_OUTPUT is not set: run this as a step of action.yml}"
}

# Words of a space-separated input, without globbing: `gpt/*` reaches goldgate as written.
words() {
  local -n into=$1
  read -ra into <<< "$2" || true
}

# lines ARRAY INPUT VALUE: the arguments of a multi-line input, one per line, as written: no
# word splitting and no globbing (a regular expression with spaces stays one argument). Blank
# lines are skipped and each line's surrounding blanks dropped. A line that is an option, a
# space and more (`--repeat 3`) is refused: it would reach goldgate as one argument.
lines() {
  # shellcheck disable=SC2178 # `into` is a nameref to the caller's array
  local -n into=$1
  local name=$2 line
  into=()
  while IFS= read -r line || [ -n "$line" ]; do
    line=${line%$'\r'}
    line=${line#"${line%%[![:space:]]*}"}
    line=${line%"${line##*[![:space:]]}"}
    [ -n "$line" ] || continue
    if [[ $line =~ ^(--?[A-Za-z0-9][A-Za-z0-9-]*)[[:space:]]+(.*)$ ]]; then
      local hint="the value on the next line"
      case "$line" in --*) hint="${BASH_REMATCH[1]}=${BASH_REMATCH[2]}, or $hint" ;; esac
      fail "input $name: the line '$line' holds an option and its value; give one argument per line ($hint)"
    fi
    into+=("$line")
  done <<< "$3"
}
