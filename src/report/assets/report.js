// genjob report, index page: filter the job rows by state, receipt status, check verdict and whether they
// add hidden characters, and sort them by any column, without reloading. It only moves and hides rows the
// page already holds (no innerHTML, no data parsed as markup); it is inlined and pinned by hash in the
// page's CSP.
(() => {
  const table = document.getElementById('jobs');
  if (!table) return;
  const body = table.tBodies[0];
  const rows = Array.from(body.rows);
  const written = new Map(rows.map((row, i) => [row, i]));
  const shown = document.getElementById('shown');
  const pick = (id) => document.getElementById(id);
  const filters = [
    ['f-state', 'state'],
    ['f-status', 'status'],
    ['f-verdict', 'verdicts'],
    ['f-hidden', 'hidden'],
  ].map(([id, field]) => [pick(id), field]);

  function apply() {
    let n = 0;
    for (const row of rows) {
      let keep = true;
      for (const [select, field] of filters) {
        if (!select || select.value === '') continue;
        const words = (row.dataset[field] || '').split(' ');
        if (!words.includes(select.value)) keep = false;
      }
      row.hidden = !keep;
      if (keep) n++;
    }
    if (shown) shown.textContent = String(n);
  }
  for (const [select] of filters) if (select) select.addEventListener('change', apply);

  const heads = Array.from(table.tHead.rows[0].cells);
  heads.forEach((th, column) => {
    const button = th.querySelector('button');
    if (!button) return;
    button.addEventListener('click', () => {
      const ascending = th.getAttribute('aria-sort') !== 'ascending';
      for (const other of heads) other.removeAttribute('aria-sort');
      th.setAttribute('aria-sort', ascending ? 'ascending' : 'descending');
      const numeric = th.dataset.type === 'num';
      const value = (row) => {
        const cell = row.cells[column];
        const v = cell ? (cell.dataset.v ?? cell.textContent) : '';
        return numeric ? Number(v) : v;
      };
      const sorted = rows.slice().sort((a, b) => {
        const x = value(a);
        const y = value(b);
        const order = numeric ? x - y : x < y ? -1 : x > y ? 1 : 0;
        // ties keep the key order the page was written in
        return (ascending ? order : -order) || written.get(a) - written.get(b);
      });
      for (const row of sorted) body.appendChild(row);
    });
  });
  apply();
})();
