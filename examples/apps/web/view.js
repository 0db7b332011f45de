// The view of examples/apps: a sortable table of the inventory tool's
// structured result, whose Restock buttons call the app-only restock tool
// through the host. Built into ../dist/view.html by build.mjs.
import { App } from "@modelcontextprotocol/ext-apps";

const app = new App({ name: "keel-inventory-view", version: "1.0.0" });
const table = document.getElementById("table");
const tbody = table.querySelector("tbody");
const status = document.getElementById("status");
let rows = [];
let sort = { key: "sku", dir: 1 };
let lowStock = 5;

function render() {
  const sorted = [...rows].sort((a, b) => {
    const x = a[sort.key], y = b[sort.key];
    return (typeof x === "number" ? x - y : String(x).localeCompare(String(y))) * sort.dir;
  });
  tbody.replaceChildren(...sorted.map((r) => {
    const tr = document.createElement("tr");
    tr.dataset.sku = r.sku;
    if (r.qty < lowStock) tr.className = "low";
    const cell = (text, cls) => {
      const td = document.createElement("td");
      td.textContent = text;
      if (cls) td.className = cls;
      return td;
    };
    const act = document.createElement("td");
    const btn = document.createElement("button");
    btn.textContent = "Restock";
    btn.dataset.sku = r.sku;
    btn.addEventListener("click", () => restock(r.sku, btn));
    act.append(btn);
    tr.append(cell(r.sku), cell(r.name), cell(String(r.qty), "num qty"), act);
    return tr;
  }));
  for (const th of table.querySelectorAll("th[data-key]")) {
    th.setAttribute("aria-sort", th.dataset.key === sort.key ? (sort.dir > 0 ? "ascending" : "descending") : "none");
  }
  table.hidden = false;
}

for (const th of table.querySelectorAll("th[data-key]")) {
  th.addEventListener("click", () => {
    sort = th.dataset.key === sort.key ? { key: sort.key, dir: -sort.dir } : { key: th.dataset.key, dir: 1 };
    render();
  });
}

async function restock(sku, btn) {
  btn.disabled = true;
  status.textContent = `Restocking ${sku}…`;
  try {
    const res = await app.callServerTool({ name: "restock", arguments: { sku, amount: 10 } });
    if (res.isError) throw new Error(res.content?.[0]?.text ?? "restock failed");
    const item = res.structuredContent;
    rows = rows.map((r) => (r.sku === item.sku ? { ...r, qty: item.qty } : r));
    render();
    status.textContent = `Restocked ${item.sku}: ${item.qty} in stock`;
    document.body.dataset.restocked = item.sku;
  } catch (err) {
    status.textContent = `Restock failed: ${err.message}`;
  } finally {
    btn.disabled = false;
  }
}

app.ontoolinput = ({ arguments: args }) => {
  document.getElementById("input").textContent = `Warehouse: ${args?.warehouse ?? "(all)"}`;
  document.body.dataset.input = JSON.stringify(args ?? {});
};

app.ontoolresult = (result) => {
  const data = result.structuredContent;
  if (!data || !Array.isArray(data.items)) {
    status.textContent = "The tool returned no items.";
    return;
  }
  rows = data.items;
  lowStock = data.lowStock ?? lowStock;
  render();
  document.body.dataset.state = "rendered";
};

app.connect().then(
  () => {
    if (document.body.dataset.state === "loading") document.body.dataset.state = "connected";
  },
  (err) => {
    status.textContent = `Cannot reach the host: ${err.message}`;
    document.body.dataset.state = "failed";
  },
);
