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
