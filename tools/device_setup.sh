# Source on the device machine: installs the carried wheels (.whl) and cuzk itself.
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
echo /tmp/site > "$(python3 -c 'import site; print(site.getsitepackages()[0])')/zz_site.pth"
python3 -m pip install -q --no-deps --no-build-isolation --no-index -e . >/tmp/cuzk-install.log 2>&1 || export PYTHONPATH=$PWD
export PYTHONUNBUFFERED=1
# the commit the copied tree came from (its .git may be stale there): `git rev-parse HEAD > .device-commit`
# (plus "-dirty" for uncommitted changes) before the call, and carry .device-commit
[ -f .device-commit ] && export CUZK_COMMIT=$(cat .device-commit)
