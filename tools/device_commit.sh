# Before a device call: record the commit (and whether the tree is dirty) for the copied tree; carry .device-commit.
# On the device the copied .git is stale: when .device-commit names a commit this .git does not have, this is
# such a copy, and the file is left as it came (session 6 overwrote it there and stamped stale commits).
if [ -f .device-commit ]; then
  prev=$(cut -d- -f1 .device-commit)
  if [ -n "$prev" ] && ! git cat-file -e "$prev^{commit}" 2>/dev/null; then
    echo "device_commit.sh: .device-commit names $prev, which this checkout does not have: left as it is" >&2
    exit 0
  fi
fi
echo "$(git rev-parse HEAD)$(git diff --quiet HEAD || echo -dirty)" > .device-commit
