// Uploads Prio3Histogram measurements with the unmodified @divviup/dap client.
// Usage: node node_upload.mjs NODE_MODULES_DIR TASK_JSON CELLS_JSON
// Prints {"sent": N}; exits non-zero on the first refused upload.
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";

const [modules, taskPath, cellsPath] = process.argv.slice(2);
const { Task } = await import(pathToFileURL(`${modules}/@divviup/dap/dist/index.js`).href);
const dap = JSON.parse(readFileSync(taskPath, "utf8")).dap;
const task = new Task({
  type: dap.vdaf.type,
  length: dap.vdaf.length,
  chunkLength: dap.vdaf.chunk_length,
  id: dap.task_id,
  leader: dap.leader,
  helper: dap.helper,
  timePrecisionSeconds: dap.time_precision,
});
const cells = JSON.parse(readFileSync(cellsPath, "utf8"));
let sent = 0;
for (const cell of cells) {
  await task.sendMeasurement(cell);
  sent += 1;
}
console.log(JSON.stringify({ sent }));
