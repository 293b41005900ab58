// A strict well-formedness check of an XML (or XHTML-like) document, for
// tests that read SVG: every tag closed in order, attributes quoted and
// not repeated, only the five predefined entities or character
// references, one root (after an optional declaration and doctype).
// Returns the elements as {name, attrs, text} in document order; throws
// naming the offset of the first fault.

export function parseXml(src, { html = false } = {}) {
  const elements = [];
  const stack = [];
  let i = 0;
  let roots = 0;
  const fail = (why) => { throw new Error(`XML not well-formed at ${i}: ${why}: ${JSON.stringify(src.slice(i, i + 40))}`); };
  const checkText = (t) => {
    const amp = /&([^;]*);?/g;
    let m;
    while ((m = amp.exec(t)) !== null) {
      if (!m[0].endsWith(';') || !/^(amp|lt|gt|quot|apos|#\d+|#x[0-9a-fA-F]+)$/.test(m[1])) fail('bad entity ' + m[0]);
    }
    if (t.includes('<')) fail('stray <');
  };
  const name = /^[A-Za-z_:][-A-Za-z0-9._:]*/;
  if (src.startsWith('<?xml')) { i = src.indexOf('?>') + 2; if (i < 2) fail('unterminated declaration'); }
  while (i < src.length) {
    const lt = src.indexOf('<', i);
    const text = src.slice(i, lt < 0 ? src.length : lt);
    checkText(text);
    if (stack.length) stack[stack.length - 1].text += text;
    else if (text.trim()) fail('text outside the root');
    if (lt < 0) break;
    i = lt;
    if (src.startsWith('<!--', i)) { const e = src.indexOf('-->', i); if (e < 0) fail('open comment'); i = e + 3; continue; }
    if (src.startsWith('<!DOCTYPE', i)) { if (stack.length || roots) fail('late doctype'); i = src.indexOf('>', i) + 1; continue; }
    if (src[i + 1] === '/') {
      const m = name.exec(src.slice(i + 2));
      if (!m) fail('bad end tag');
      const top = stack.pop();
      if (!top || top.name !== m[0]) fail(`</${m[0]}> closes ${top ? top.name : 'nothing'}`);
      i += 2 + m[0].length;
      if (src[i] !== '>') fail('end tag not closed');
      i++;
      continue;
    }
    const m = name.exec(src.slice(i + 1));
    if (!m) fail('bad start tag');
    if (!stack.length) { roots++; if (roots > 1) fail('second root'); }
    const el = { name: m[0], attrs: {}, text: '' };
    i += 1 + m[0].length;
    for (;;) {
      const ws = /^\s*/.exec(src.slice(i))[0].length;
      i += ws;
      if (src.startsWith('/>', i)) { i += 2; elements.push(el); break; }
      if (src[i] === '>') {
        i++;
        elements.push(el);
        if (!(html && /^(meta|link|br)$/.test(el.name))) stack.push(el);
        break;
      }
      if (!ws) fail('attributes need white space between them');
      const a = name.exec(src.slice(i));
      if (!a) fail('bad attribute name');
      i += a[0].length;
      if (src[i] !== '=') fail(`attribute ${a[0]} without value`);
      const q = src[i + 1];
      if (q !== '"' && q !== "'") fail(`attribute ${a[0]} not quoted`);
      const end = src.indexOf(q, i + 2);
      if (end < 0) fail('unterminated attribute');
      const v = src.slice(i + 2, end);
      checkText(v);
      if (a[0] in el.attrs) fail(`attribute ${a[0]} repeated`);
      el.attrs[a[0]] = v.replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&quot;/g, '"').replace(/&#39;/g, "'").replace(/&amp;/g, '&');
      i = end + 1;
    }
  }
  if (stack.length) fail(`<${stack[stack.length - 1].name}> never closed`);
  if (roots !== 1) fail('no root');
  return elements;
}

/** The text of an element with entities resolved. */
export function unescape(t) {
  return t.replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&quot;/g, '"').replace(/&#39;/g, "'").replace(/&amp;/g, '&');
}
