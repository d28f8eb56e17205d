// The shell side of engines run as processes: fixed POSIX sh scripts (sh -c SCRIPT name args...),
// so a command line sent over SSH is this constant text plus quoted argv words, and nothing from a
// recipe or the host is ever part of the script itself. Each builder returns an argv; the host's
// exec quotes every word (shellQuote.ts) or runs it without a shell (the local host).
// Linux hosts: the stop script reads /proc, the follower needs GNU tail's --pid.

/** $0 of every script: what `ps` shows for the shells fluidcap starts. */
export const SCRIPT_NAME = 'fluidcap-engine';

// Starts "$@" in a new session (its own process group), output appended to engine.log, stdin
// closed; the environment comes as NAME=value lines on stdin (never on a command line). The group
// leader is a shell that waits for the engine and writes its exit code; the script prints its pid.
const START = `set -u
dir=$1; labels=$2; shift 2
umask 077
mkdir -p -- "$dir" || exit 90
if [ -e "$dir/pid" ]; then echo "fluidcap: $dir/pid exists: an engine of this run may still run (fluidcap clean stops it)" >&2; exit 91; fi
printf '%s\\n' "$labels" > "$dir/labels.json" || exit 90
rm -f -- "$dir/exit" "$dir/pid.new"
: > "$dir/engine.log"
cat /proc/sys/kernel/random/boot_id > "$dir/boot" 2>/dev/null
while IFS= read -r kv; do export "$kv"; done
FLUIDCAP_ENGINE_STATE=$dir; export FLUIDCAP_ENGINE_STATE
setsid sh -c 'echo $$ > "$1/pid.new" && mv -f -- "$1/pid.new" "$1/pid" || exit 93; d=$1; shift; "$@"; echo $? > "$d/exit"' ${SCRIPT_NAME} "$dir" "$@" < /dev/null >> "$dir/engine.log" 2>&1 &
n=0
while [ ! -s "$dir/pid" ]; do
  n=$((n+1))
  if [ $n -gt 400 ]; then echo "fluidcap: the engine's process group wrote no pid within 20 s" >&2; exit 92; fi
  sleep 0.05
done
cat -- "$dir/pid"`;

// Stops the group named by $dir/pid: only when a process of it carries the directory's marker
// (a group id reused by someone else's processes is left alone), SIGTERM to the whole group, SIGKILL
// after $2 seconds, then waits for it to be gone. Removes the directory unless something remains.
// Prints one line: none | gone PGID | stale PGID | stopped PGID [killed] | remaining PGID.
const STOP = `dir=$1; grace=$2
marker="FLUIDCAP_ENGINE_STATE=$dir"
pg=
[ -r "$dir/pid" ] && read -r pg < "$dir/pid"
case $pg in ''|*[!0-9]*) rm -rf -- "$dir"; echo none; exit 0;; esac
ours() {
  for s in /proc/[0-9]*/stat; do
    read -r st 2>/dev/null < "$s" || continue
    set -- \${st##*) }
    [ "$3" = "$pg" ] || continue
    p=\${s#/proc/}; p=\${p%/stat}
    tr '\\000' '\\n' 2>/dev/null < "/proc/$p/environ" | grep -qxF -e "$marker" && return 0
  done
  return 1
}
alive() { kill -0 -"$pg" 2>/dev/null; }
if ! alive; then rm -rf -- "$dir"; echo "gone $pg"; exit 0; fi
if ! ours; then rm -rf -- "$dir"; echo "stale $pg"; exit 0; fi
kill -TERM -"$pg" 2>/dev/null
t=0
while alive && [ $t -lt $((grace * 5)) ]; do sleep 0.2; t=$((t + 1)); done
killed=
if alive; then
  kill -KILL -"$pg" 2>/dev/null; killed=" killed"
  t=0
  while alive && [ $t -lt 25 ]; do sleep 0.2; t=$((t + 1)); done
fi
if alive; then echo "remaining $pg"; exit 0; fi
rm -rf -- "$dir"
echo "stopped $pg$killed"`;

// Follows engine.log from its first byte until the group leader $2 has exited.
const FOLLOW = 'exec tail -c +1 -f --pid="$2" -- "$1/engine.log"';

// The engine's exit code once it ended on its own, else `running` while its group has a process,
// else nothing (the group was killed with its leader).
const EXIT_CODE = 'if [ -s "$1/exit" ]; then cat -- "$1/exit"; elif kill -0 -"$2" 2>/dev/null; then echo running; fi; true';

// Before anything starts: can the program run, can each file be read. Prints `program ok` or
// `program missing|not-executable`, then `file N ok|unreadable` for each file argument.
const CHECK = `p=$1; shift
case $p in
  */*) if [ ! -e "$p" ]; then echo "program missing"; elif [ -f "$p" ] && [ -x "$p" ]; then echo "program ok"; else echo "program not-executable"; fi ;;
  *) if command -v "$p" > /dev/null 2>&1; then echo "program ok"; else echo "program missing"; fi ;;
esac
n=0
for f in "$@"; do
  if [ -f "$f" ] && [ -r "$f" ]; then echo "file $n ok"; else echo "file $n unreadable"; fi
  n=$((n + 1))
done`;

// The entries of a state root (directories only, links never followed).
const LIST = 'cd -- "$1" 2>/dev/null || exit 0; for d in *; do if [ -d "$d" ] && [ ! -L "$d" ]; then printf "%s\\n" "$d"; fi; done';

const sh = (script: string, args: readonly string[]) => ['sh', '-c', script, SCRIPT_NAME, ...args];

export const startScript = (stateDir: string, labelsJson: string, argv: readonly string[]) => sh(START, [stateDir, labelsJson, ...argv]);
export const stopScript = (stateDir: string, graceS: number) => sh(STOP, [stateDir, String(Math.max(0, Math.ceil(graceS)))]);
export const followScript = (stateDir: string, leaderPid: number) => sh(FOLLOW, [stateDir, String(leaderPid)]);
export const exitCodeScript = (stateDir: string, pgid: number) => sh(EXIT_CODE, [stateDir, String(pgid)]);
export const checkScript = (program: string, files: readonly string[]) => sh(CHECK, [program, ...files]);
export const listScript = (root: string) => sh(LIST, [root]);
