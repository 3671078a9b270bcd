// The call console: a team's calls through the public read API and the ingest endpoint only.
// The API key lives in this tab's sessionStorage and travels only in the X-API-Key header; every
// value from the API is rendered as text (textContent), never as markup.

const KEY = 'console.apiKey';
const ADMIN = 'console.adminToken';
const INGEST = '/api/integrations/push-api/ingest';
const POLL_MS = 2000;

const $ = (id) => document.getElementById(id);
const view = () => $('view');

/** An element with attributes and children (strings become text nodes). */
const h = (tag, attrs = {}, ...children) => {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith('on')) el.addEventListener(name.slice(2), value);
    else if (name === 'text') el.textContent = value;
    else el.setAttribute(name, value === true ? '' : String(value));
  }
  for (const child of children.flat())
    if (child !== null && child !== undefined)
      el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  return el;
};

/** A value from the API, isolated: its bidirectional controls cannot reorder the text around it. */
const iso = (value) => h('bdi', {}, value);

const apiKey = () => sessionStorage.getItem(KEY);

/** Why a key or token cannot travel in a header (which carries visible ASCII only), or undefined. */
const unsendable = (value) => {
  const bad = [...value].find((c) => c < '!' || c > '~');
  if (bad === undefined) return undefined;
  const code = bad.codePointAt(0).toString(16).toUpperCase().padStart(4, '0');
  return `it holds ${JSON.stringify(bad)} (U+${code}), and only visible ASCII characters can be sent in a header`;
};

/**
 * Calls the API; resolves with the status and the parsed body (null for an empty one). A request
 * that gets no answer (no connection, or a header that cannot be sent) resolves with status 0 and
 * a `detail` saying why; one aborted by `signal` resolves with status 0 and no body.
 */
const api = async (path, { method = 'GET', body, admin = false, signal, headers: extra = {} } = {}) => {
  const headers = { accept: 'application/json', ...extra };
  if (admin) headers.authorization = `Bearer ${sessionStorage.getItem(ADMIN) ?? ''}`;
  else headers['x-api-key'] = apiKey() ?? '';
  if (body !== undefined) headers['content-type'] = 'application/json';
  let response;
  let text;
  try {
    response = await fetch(path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      signal,
    });
    text = await response.text();
  } catch (error) {
    if (signal?.aborted) return { status: 0, body: null };
    return { status: 0, body: { detail: `The service could not be reached: ${error.message}` } };
  }
  let parsed;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {
    parsed = { detail: text };
  }
  return { status: response.status, body: parsed };
};

// White space as the service trims it: what trim() removes except U+FEFF, which is kept.
const WHITE = /[\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]/;
const trimWhite = (text) => {
  let start = 0;
  let end = text.length;
  while (start < end && WHITE.test(text[start])) start++;
  while (end > start && WHITE.test(text[end - 1])) end--;
  return text.slice(start, end);
};

const dateText = (iso) => (iso ? new Date(iso).toLocaleString() : '—');
const statusBadge = (call) =>
  h(
    'span',
    { class: `status ${call.status}`, 'data-status': call.status },
    call.status === 'pending' && call.stage ? `pending · ${call.stage.replaceAll('_', ' ')}` : call.status,
  );

/** No answer, 429 and 5xx may pass: the view asks again, waiting longer after each failure. */
const transient = (status) => status === 0 || status === 429 || status >= 500;
const backoff = (failures) => Math.min(POLL_MS * 2 ** (failures - 1), 30_000);

let timer;
const stopPolling = () => {
  clearTimeout(timer);
  timer = undefined;
};

let current = new AbortController();
/**
 * Starts a view: the previous view's requests are aborted and its timer stopped. A render checks
 * its `signal` after each await and stops once it is aborted, so a late answer never draws over
 * the view that replaced it.
 */
const newView = () => {
  current.abort();
  stopPolling();
  current = new AbortController();
  return current.signal;
};

/** Puts `children` in `parent`, leaving in place each child equal to the one already there (focus stays). */
const patch = (parent, children) => {
  children.forEach((child, i) => {
    const held = parent.children[i];
    if (!held) parent.append(child);
    else if (!held.isEqualNode(child)) held.replaceWith(child);
  });
  while (parent.children.length > children.length) parent.lastElementChild.remove();
};

/** When the API refuses the key: back to the key form, saying why. */
const keyRefused = (problem) => {
  sessionStorage.removeItem(KEY);
  showKeyPanel(problem?.detail ?? 'The key was refused.');
};

const showKeyPanel = (message = '') => {
  newView();
  $('key-panel').hidden = false;
  $('forget-key').hidden = true;
  $('key-error').textContent = message;
  view().replaceChildren();
  $('key-input').focus();
};

// ---- call list -------------------------------------------------------------------------------

const listState = { search: '', tag: '', status: '', cursor: undefined, previous: [] };

const listQuery = () => {
  const params = new URLSearchParams();
  if (listState.search) params.set('search', listState.search);
  if (listState.tag) params.set('tag', listState.tag);
  if (listState.status) params.set('status', listState.status);
  if (listState.cursor) params.set('cursor', listState.cursor);
  params.set('limit', '25');
  return `/api/calls?${params}`;
};

const callRow = (call) =>
  h(
    'li',
    { class: 'call', 'data-call-id': call.callId },
    h('span', { class: 'title' }, h('a', { href: `#/calls/${encodeURIComponent(call.callId)}` }, call.title)),
    h('span', {}, call.repName ?? h('span', { class: 'muted' }, 'no rep')),
    h('span', {}, statusBadge(call)),
    h('span', { 'aria-label': 'score' }, call.score === null ? '—' : String(call.score)),
    h(
      'span',
      { class: 'tags' },
      call.tags.map((tag) => h('span', { class: 'tag' }, tag)),
    ),
    h('span', {}, dateText(call.callDate)),
  );

const renderList = async () => {
  const signal = newView();
  const indicator = h('span', { id: 'live', class: 'live', role: 'status' }, 'Up to date');
  const list = h('ul', { class: 'calls', id: 'calls', 'aria-label': 'Calls' });
  const message = h('p', { id: 'list-message', class: 'muted' });
  const next = h('button', { type: 'button', class: 'secondary', id: 'next-page', disabled: true }, 'Next page');
  const first = h(
    'button',
    { type: 'button', class: 'secondary', id: 'first-page', disabled: !listState.cursor },
    'First page',
  );
  const filters = h(
    'form',
    { class: 'row', id: 'filters', role: 'search', 'aria-label': 'Filter calls' },
    h(
      'div',
      { class: 'field' },
      h('label', { for: 'search' }, 'Search title or rep'),
      h('input', { id: 'search', name: 'search', type: 'search', value: listState.search }),
    ),
    h(
      'div',
      { class: 'field' },
      h('label', { for: 'tag' }, 'Tag'),
      h('input', { id: 'tag', name: 'tag', value: listState.tag }),
    ),
    h(
      'div',
      { class: 'field' },
      h('label', { for: 'status' }, 'Status'),
      h(
        'select',
        { id: 'status', name: 'status' },
        ['', 'pending', 'completed', 'failed'].map((s) =>
          h('option', { value: s, selected: s === listState.status }, s || 'any'),
        ),
      ),
    ),
    h('button', { type: 'submit' }, 'Apply'),
  );
  filters.addEventListener('submit', (event) => {
    event.preventDefault();
    listState.search = $('search').value;
    listState.tag = trimWhite($('tag').value);
    listState.status = $('status').value;
    listState.cursor = undefined;
    listState.previous = [];
    void renderList();
  });
  view().replaceChildren(
    h('h2', {}, 'Calls'),
    filters,
    h('div', { class: 'toolbar' }, indicator, message),
    h(
      'div',
      { class: 'call head', 'aria-hidden': 'true' },
      h('span', {}, 'Title'),
      h('span', {}, 'Rep'),
      h('span', {}, 'Status'),
      h('span', {}, 'Score'),
      h('span', {}, 'Tags'),
      h('span', {}, 'Date'),
    ),
    list,
    h('div', { class: 'pager' }, first, next),
  );
  first.addEventListener('click', () => {
    listState.cursor = undefined;
    listState.previous = [];
    void renderList();
  });

  let failures = 0;
  const load = async () => {
    const { status, body } = await api(listQuery(), { signal });
    if (signal.aborted) return;
    if (status === 401) return keyRefused(body);
    if (status !== 200) {
      message.textContent = body?.detail ?? `The list could not be read (${status}).`;
      const retry = transient(status);
      indicator.textContent = retry ? 'Live: retrying after an error…' : 'Not updating';
      indicator.classList.toggle('on', retry);
      if (retry) timer = setTimeout(() => void load(), backoff(++failures));
      return;
    }
    failures = 0;
    // Rows are updated in place: a row that did not change is not touched.
    const rows = new Map([...list.children].map((li) => [li.dataset.callId, li]));
    const fresh = body.calls.map((call) => {
      const row = callRow(call);
      const held = rows.get(call.callId);
      return held && held.isEqualNode(row) ? held : row;
    });
    if (fresh.length !== list.children.length || fresh.some((row, i) => list.children[i] !== row))
      list.replaceChildren(...fresh);
    message.textContent = body.calls.length === 0 ? 'No calls match.' : '';
    next.disabled = !body.nextCursor;
    next.onclick = () => {
      listState.previous.push(listState.cursor);
      listState.cursor = body.nextCursor;
      void renderList();
    };
    const pending = body.calls.some((call) => call.status === 'pending');
    indicator.textContent = pending ? 'Live: updating while calls are pending…' : 'Up to date';
    indicator.classList.toggle('on', pending);
    if (pending) timer = setTimeout(() => void load(), POLL_MS);
  };
  await load();
};

// ---- one call --------------------------------------------------------------------------------

/**
 * Speaker turns of a transcript: `Name: text` lines; other lines continue the previous turn. Lines
 * end at LF, CRLF or a lone CR. The text is kept as sent (white space and line breaks included).
 * The pattern cannot backtrack over a long line: the name is at most 60 characters, and once the
 * blanks after its colon are taken the rest of the line always matches (`s`: any character).
 */
const turnsOf = (text) => {
  const turns = [];
  for (const line of text.split(/\r\n|\r|\n/)) {
    const match = /^([^:]{1,60}):[ \t]+(.*)$/s.exec(line);
    if (match) turns.push({ speaker: match[1], text: match[2] });
    else if (turns.length > 0) turns[turns.length - 1].text += `\n${line}`;
    else if (line.trim()) turns.push({ speaker: null, text: line });
  }
  return turns;
};

const section = (title, ...content) => h('section', { 'aria-label': title }, h('h3', {}, title), ...content);

const renderCall = async (callId) => {
  const signal = newView();
  let article;
  let failures = 0;
  const load = async () => {
    const [{ status, body: call }, timeline] = await Promise.all([
      api(`/api/calls/${encodeURIComponent(callId)}`, { signal }),
      api(`/api/calls/${encodeURIComponent(callId)}/events`, { signal }),
    ]);
    if (signal.aborted) return;
    if (status === 401) return keyRefused(call);
    if (status !== 200) {
      const retry = transient(status);
      const problem = `${call?.detail ?? `The call could not be read (${status}).`}${retry ? ' Trying again…' : ''}`;
      if (retry) timer = setTimeout(() => void load(), backoff(++failures));
      // A call already drawn stays, with the reason it is not up to date.
      if (article?.isConnected) article.querySelector('#call-problem').textContent = problem;
      else
        view().replaceChildren(
          h('p', { class: 'error', role: 'alert' }, problem),
          h('a', { href: '#/' }, 'Back to the list'),
        );
      return;
    }
    failures = 0;
    const a = call.analysis;
    const parts = [
      h('p', {}, h('a', { href: '#/' }, '← All calls')),
      h('p', { class: 'error', role: 'alert', id: 'call-problem' }),
      h('h2', { id: 'call-title' }, call.title),
      h(
        'p',
        {},
        statusBadge(call),
        ' ',
        h(
          'span',
          { class: 'muted' },
          `${dateText(call.callDate)} · `,
          call.repName ? iso(call.repName) : 'no rep',
          call.repEmail ? [' <', iso(call.repEmail), '>'] : null,
        ),
      ),
    ];
    if (call.status === 'failed')
      parts.push(
        h(
          'p',
          { class: 'error', role: 'alert', id: 'failure' },
          'Failed: ',
          iso(call.processingError),
          ' — ',
          iso(call.statusReason),
        ),
      );
    if (a) {
      parts.push(section('Summary', h('p', { id: 'summary' }, a.summary)));
      parts.push(
        section(
          'Score',
          h('p', { id: 'score' }, h('strong', {}, String(a.score)), ' / 100'),
          h(
            'table',
            {},
            h(
              'thead',
              {},
              h(
                'tr',
                {},
                h('th', { scope: 'col' }, 'Component'),
                h('th', { scope: 'col' }, 'Score'),
                h('th', { scope: 'col' }, 'Weight'),
                h('th', { scope: 'col' }, 'Why'),
              ),
            ),
            h(
              'tbody',
              {},
              a.components.map((c) =>
                h(
                  'tr',
                  {},
                  h('td', {}, c.name),
                  h('td', {}, String(c.score)),
                  h('td', {}, String(c.weight)),
                  h('td', {}, c.explanation),
                ),
              ),
            ),
          ),
        ),
      );
      parts.push(
        section(
          'Insights',
          a.insights.length === 0
            ? h('p', { class: 'muted' }, 'None.')
            : h(
                'ul',
                { id: 'insights' },
                a.insights.map((i) =>
                  h(
                    'li',
                    {},
                    h('strong', {}, `${i.kind}: `),
                    iso(i.message),
                    i.evidence ? h('blockquote', { class: 'evidence' }, i.evidence) : null,
                  ),
                ),
              ),
        ),
      );
    }
    parts.push(
      section(
        'Transcript',
        call.transcript
          ? h(
              'ol',
              { class: 'turns', id: 'transcript' },
              turnsOf(call.transcript.text).map((t) =>
                h('li', {}, t.speaker ? h('bdi', { class: 'speaker' }, `${t.speaker}:`) : null, iso(t.text)),
              ),
            )
          : h('p', { class: 'muted' }, 'Not transcribed yet.'),
      ),
    );
    if (call.deal) {
      const d = call.deal;
      parts.push(
        section(
          'Deal',
          h(
            'p',
            { id: 'deal' },
            `Size ${d.dealSize ?? '—'} · collected ${d.revenueCollected ?? '—'} · date ${d.dealDate ?? '—'}`,
          ),
          d.notes ? h('p', { id: 'deal-notes', class: 'verbatim' }, d.notes) : null,
        ),
      );
    }
    parts.push(
      section(
        'Tags',
        call.tags.length
          ? h(
              'p',
              { class: 'tags' },
              call.tags.map((t) => h('span', { class: 'tag' }, t)),
            )
          : h('p', { class: 'muted' }, 'None.'),
      ),
    );
    parts.push(
      section(
        'Notes',
        call.notes ? h('p', { id: 'notes', class: 'verbatim' }, call.notes) : h('p', { class: 'muted' }, '—'),
      ),
    );
    parts.push(
      section(
        'Attribution',
        h('p', {}, iso(call.attributedTo.name), ' <', iso(call.attributedTo.email), `> (${call.attributedTo.kind})`),
      ),
    );
    if (timeline.status === 200) {
      parts.push(
        section(
          'Processing timeline',
          h(
            'ol',
            { class: 'timeline', id: 'timeline' },
            timeline.body.events.map((e) => h('li', {}, h('time', { datetime: e.at }, dateText(e.at)), ` — ${e.type}`)),
          ),
        ),
      );
    }
    // A refresh changes only the parts that changed: focus and reading position stay.
    if (article?.isConnected) patch(article, parts);
    else {
      article = h('article', { class: 'detail' }, ...parts);
      view().replaceChildren(article);
    }
    if (call.status === 'pending') timer = setTimeout(() => void load(), POLL_MS);
  };
  await load();
};

// ---- submit ----------------------------------------------------------------------------------

const FIELDS = [
  ['transcript', 'Transcript (Speaker: text lines)', 'textarea'],
  ['audioUrl', 'Recording link (https://…)', 'url'],
  ['repName', 'Rep name', 'text'],
  ['repEmail', 'Rep e-mail', 'email'],
  ['callTitle', 'Title', 'text'],
  ['tags', 'Tags (comma-separated)', 'text'],
  ['notes', 'Notes', 'text'],
];

/** An Idempotency-Key for one filling of the form (32 hex digits): sending it again is safe. */
const idempotencyKey = () =>
  [...crypto.getRandomValues(new Uint8Array(16))].map((byte) => byte.toString(16).padStart(2, '0')).join('');

const renderSubmit = () => {
  const signal = newView();
  let fill = idempotencyKey();
  const send = h('button', { type: 'submit' }, 'Submit the call');
  const result = h('div', { id: 'submit-result', role: 'status' });
  const form = h(
    'form',
    { id: 'submit-form', novalidate: true },
    FIELDS.map(([name, label, type]) =>
      h(
        'div',
        { class: 'field' },
        h('label', { for: `f-${name}` }, label),
        type === 'textarea'
          ? h('textarea', { id: `f-${name}`, name, 'aria-describedby': `e-${name}` })
          : h('input', {
              id: `f-${name}`,
              name,
              type: type === 'url' ? 'text' : type,
              'aria-describedby': `e-${name}`,
            }),
        h('p', { class: 'field-error', id: `e-${name}` }),
      ),
    ),
    h('p', {}, send),
  );
  // Any edit makes another call: it gets a key of its own.
  form.addEventListener('input', () => (fill = idempotencyKey()));
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    for (const [name] of FIELDS) {
      $(`e-${name}`).textContent = '';
      $(`f-${name}`).removeAttribute('aria-invalid');
    }
    const body = {};
    for (const [name] of FIELDS) {
      const value = $(`f-${name}`).value;
      if (trimWhite(value) === '') continue;
      body[name] = name === 'tags' ? value.split(',').map(trimWhite).filter(Boolean) : value;
    }
    // One request at a time: a double click does not send the call twice.
    send.disabled = true;
    const { status, body: answer } = await api(INGEST, { method: 'POST', body, headers: { 'idempotency-key': fill } });
    send.disabled = false;
    if (signal.aborted) return;
    if (status === 401) return keyRefused(answer);
    const unplaced = [];
    for (const error of answer?.errors ?? []) {
      const name = /^[A-Za-z]+/.exec(error.field)?.[0];
      const holder = name && $(`e-${name}`);
      if (holder) {
        holder.textContent = `${holder.textContent ? `${holder.textContent} ` : ''}${error.field}: ${error.message}`;
        $(`f-${name}`).setAttribute('aria-invalid', 'true');
      } else unplaced.push(`${error.field}: ${error.message}`);
    }
    const ok = status === 201;
    if (ok) fill = idempotencyKey();
    result.replaceChildren(
      h(
        'p',
        { class: ok ? '' : 'error' },
        ok ? 'Accepted: ' : `Refused (${status}): `,
        ok
          ? h('a', { href: `#/calls/${encodeURIComponent(answer.callId)}` }, `call ${answer.callId}`)
          : (answer?.detail ?? ''),
      ),
      ...unplaced.map((line) => h('p', { class: 'error' }, line)),
      h('pre', { id: 'submit-answer' }, JSON.stringify(answer, null, 2)),
    );
    const firstInvalid = form.querySelector('[aria-invalid="true"]');
    if (firstInvalid) firstInvalid.focus();
  });
  view().replaceChildren(
    h('h2', {}, 'Submit a call'),
    h(
      'p',
      { class: 'muted' },
      'A transcript, a recording link, or both. The answer of the API is shown below, and a refused field next to it.',
    ),
    form,
    result,
  );
};

// ---- operator --------------------------------------------------------------------------------

const renderOperator = async () => {
  const signal = newView();
  let loads = 0;
  const table = h('div', { id: 'projections' });
  const form = h(
    'form',
    { class: 'row', id: 'admin-form' },
    h(
      'div',
      { class: 'field' },
      h('label', { for: 'admin-token' }, 'Admin token'),
      h('input', {
        id: 'admin-token',
        type: 'password',
        autocomplete: 'off',
        value: sessionStorage.getItem(ADMIN) ?? '',
      }),
    ),
    h('button', { type: 'submit' }, 'Show projections'),
  );
  let failures = 0;
  const load = async () => {
    const mine = ++loads;
    const { status, body } = await api('/api/admin/projections', { admin: true, signal });
    if (signal.aborted || mine !== loads) return;
    if (status !== 200) {
      table.replaceChildren(h('p', { class: 'error', role: 'alert' }, body?.detail ?? `Refused (${status}).`));
      if (transient(status)) timer = setTimeout(() => void load(), backoff(++failures));
      return;
    }
    failures = 0;
    table.replaceChildren(
      h(
        'table',
        {},
        h(
          'thead',
          {},
          h(
            'tr',
            {},
            ['Projection', 'State', 'Checkpoint', 'Head', 'Lag', 'Version'].map((c) => h('th', { scope: 'col' }, c)),
          ),
        ),
        h(
          'tbody',
          {},
          body.projections.map((p) =>
            h(
              'tr',
              {},
              h('td', {}, p.name),
              h('td', {}, p.state, p.stoppedOn ? [' (', iso(p.stoppedOn.error ?? ''), ')'] : null),
              h('td', {}, String(p.checkpoint)),
              h('td', {}, String(p.head)),
              h('td', {}, String(p.lag)),
              h('td', {}, String(p.version ?? '—')),
            ),
          ),
        ),
      ),
    );
    timer = setTimeout(() => void load(), POLL_MS * 2);
  };
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const token = $('admin-token').value.trim();
    const problem = unsendable(token);
    stopPolling();
    if (problem) {
      loads++;
      table.replaceChildren(h('p', { class: 'error', role: 'alert' }, `The token cannot be used: ${problem}.`));
      return;
    }
    sessionStorage.setItem(ADMIN, token);
    void load();
  });
  view().replaceChildren(
    h('h2', {}, 'Operator: projections'),
    h(
      'p',
      { class: 'muted' },
      'Needs the admin token (kept in this tab only). Everything else in the console uses your API key.',
    ),
    form,
    table,
  );
  if (sessionStorage.getItem(ADMIN)) await load();
};

// ---- routing ---------------------------------------------------------------------------------

const route = async () => {
  const hash = location.hash || '#/';
  if (hash.startsWith('#/operator')) {
    $('key-panel').hidden = true;
    return renderOperator();
  }
  if (!apiKey()) return showKeyPanel();
  const problem = unsendable(apiKey());
  if (problem) {
    sessionStorage.removeItem(KEY);
    return showKeyPanel(`The key cannot be sent: ${problem}. Paste it again.`);
  }
  $('key-panel').hidden = true;
  $('forget-key').hidden = false;
  const call = /^#\/calls\/(.+)$/.exec(hash);
  if (call) {
    let callId;
    try {
      callId = decodeURIComponent(call[1]);
    } catch {
      newView();
      view().replaceChildren(
        h('p', { class: 'error', role: 'alert' }, 'This address does not name a call: its escapes are malformed.'),
        h('a', { href: '#/' }, 'Back to the list'),
      );
      return;
    }
    return renderCall(callId);
  }
  if (hash.startsWith('#/submit')) return renderSubmit();
  return renderList();
};

document.addEventListener('DOMContentLoaded', () => {
  $('key-form').addEventListener('submit', (event) => {
    event.preventDefault();
    const key = $('key-input').value.trim();
    if (!key) return;
    const problem = unsendable(key);
    if (problem) {
      $('key-error').textContent = `The key cannot be sent: ${problem}. Paste it again.`;
      $('key-input').focus();
      return;
    }
    sessionStorage.setItem(KEY, key);
    $('key-input').value = '';
    void route();
  });
  $('forget-key').addEventListener('click', () => {
    sessionStorage.removeItem(KEY);
    sessionStorage.removeItem(ADMIN);
    showKeyPanel('The key is forgotten.');
  });
  // The skip link moves focus to the content; as a #main address it would be routed as the list.
  $('skip').addEventListener('click', (event) => {
    event.preventDefault();
    $('main').focus();
  });
  window.addEventListener('hashchange', () => void route());
  void route();
});
