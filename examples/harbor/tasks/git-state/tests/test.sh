#!/bin/bash
# Checks /app/repo with git: the branch, its one commit, main untouched, a clean tree.
mkdir -p /logs/verifier
rm -f /logs/verifier/reward.json
echo 0 > /logs/verifier/reward.txt

# No hooks, fsmonitor or ownership checks from whatever the agent left in .git/config.
g() { timeout 10 git -C /app/repo -c safe.directory='*' -c core.hooksPath=/dev/null -c core.fsmonitor=false "$@" 2>/dev/null; }

failed=0
check() {  # check <description> <command...>
  local what=$1; shift
  if "$@"; then echo "ok   $what"; else echo "FAIL $what"; failed=1; fi
}

main_ok() { [ "$(g log --format=%s main)" = "$(printf 'Add notes\nInitial commit')" ]; }
branch_ok() { g rev-parse -q --verify refs/heads/feature/greeting >/dev/null; }
one_commit() { [ "$(g rev-list --count main..feature/greeting)" = 1 ] && [ "$(g rev-parse feature/greeting~1)" = "$(g rev-parse main)" ]; }
only_greeting() { [ "$(g diff --name-only main feature/greeting)" = greeting.txt ]; }
content_ok() { [ "$(g cat-file -t feature/greeting:greeting.txt)" = blob ] && g cat-file blob feature/greeting:greeting.txt | cmp -s - <(printf 'Hello, Harbor!\n'); }
clean() { out=$(g status --porcelain --untracked-files=all) && [ -z "$out" ]; }

check "main still has its two commits" main_ok
check "branch feature/greeting exists" branch_ok
check "it is main plus exactly one commit" one_commit
check "that commit changes only greeting.txt" only_greeting
check "greeting.txt on the branch says Hello, Harbor!" content_ok
check "the working tree is clean" clean

if [ $failed = 0 ]; then echo 1 > /logs/verifier/reward.txt; fi
exit 0
