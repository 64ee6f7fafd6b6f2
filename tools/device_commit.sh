# Before a device call: record the commit (and whether the tree is dirty) for the copied tree; carry .device-commit.
echo "$(git rev-parse HEAD)$(git diff --quiet HEAD || echo -dirty)" > .device-commit
