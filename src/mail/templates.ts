/** What a notice says: a title, paragraphs of plain text, one button (a link), a small print footer. */
export type MailContent = {
  title: string;
  paragraphs: string[];
  action?: { label: string; url: string };
  footer?: string;
};

/**
 * A message's two bodies from plain text. HTML: every value escaped, styles inline, a single
 * column at most 560 px wide that narrows to the screen, no images, fonts, scripts or other
 * external resources; the link shown in full under its button, for clients that hide buttons.
 * Text: the same words, the link on a line of its own. The action's URL must be http(s).
 */
export function renderMail(content: MailContent): { text: string; html: string } {
  const action = content.action;
  if (action) checkUrl(action.url);
  const text = [
    content.title,
    '',
    ...content.paragraphs.flatMap((p) => [p, '']),
    ...(action ? [`${action.label}:`, action.url, ''] : []),
    ...(content.footer ? ['--', content.footer, ''] : []),
  ].join('\n');

  const font = 'font-family:-apple-system,BlinkMacSystemFont,\'Segoe UI\',Roboto,Helvetica,Arial,sans-serif';
  const paragraph = (p: string) => `<p style="margin:0 0 16px;font-size:16px;line-height:1.5;color:#1f2328;">${lines(p)}</p>`;
  const button = action
    ? `<table role="presentation" cellpadding="0" cellspacing="0" border="0" style="margin:8px 0 24px;"><tr><td style="border-radius:6px;background:#0b57d0;">` +
      `<a href="${escapeHtml(action.url)}" style="display:inline-block;padding:12px 24px;font-size:16px;font-weight:600;color:#ffffff;text-decoration:none;border-radius:6px;${font};">${escapeHtml(action.label)}</a>` +
      `</td></tr></table>` +
      `<p style="margin:0 0 16px;font-size:13px;line-height:1.5;color:#59636e;">If the button does not work, copy this address into your browser:<br>` +
      `<a href="${escapeHtml(action.url)}" style="color:#0b57d0;word-break:break-all;">${escapeHtml(action.url)}</a></p>`
    : '';
  const footer = content.footer
    ? `<p style="margin:24px 0 0;padding-top:16px;border-top:1px solid #d1d9e0;font-size:13px;line-height:1.5;color:#59636e;">${lines(content.footer)}</p>`
    : '';
  const html = [
    '<!DOCTYPE html>',
    '<html lang="en">',
    '<head>',
    '<meta charset="utf-8">',
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    '<meta name="color-scheme" content="light">',
    `<title>${escapeHtml(content.title)}</title>`,
    '</head>',
    `<body style="margin:0;padding:0;background:#f6f8fa;${font};">`,
    '<table role="presentation" width="100%" cellpadding="0" cellspacing="0" border="0" style="background:#f6f8fa;"><tr><td align="center" style="padding:24px 12px;">',
    '<table role="presentation" width="100%" cellpadding="0" cellspacing="0" border="0" style="max-width:560px;background:#ffffff;border:1px solid #d1d9e0;border-radius:8px;">',
    `<tr><td style="padding:24px;${font};">`,
    `<h1 style="margin:0 0 16px;font-size:22px;line-height:1.3;color:#1f2328;">${escapeHtml(content.title)}</h1>`,
    ...content.paragraphs.map(paragraph),
    button,
    footer,
    '</td></tr></table>',
    '</td></tr></table>',
    '</body>',
    '</html>',
    '',
  ].join('\n');
  return { text, html };
}

/** `base` (PUBLIC_URL) with `path` added and `query` encoded: the links messages carry. */
export function linkTo(base: string, path: string, query: Record<string, string> = {}): string {
  const url = new URL(base.replace(/\/+$/, '') + (path.startsWith('/') ? path : `/${path}`));
  for (const [name, value] of Object.entries(query)) url.searchParams.set(name, value);
  return url.href;
}

/** Text to HTML: the five characters that matter in content and attribute values. */
export function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

/** Escaped, with line breaks kept. */
function lines(value: string): string {
  return escapeHtml(value).replace(/\r?\n/g, '<br>');
}

function checkUrl(url: string): void {
  let parsed: URL | undefined;
  try {
    parsed = new URL(url);
  } catch {
    parsed = undefined;
  }
  if (!parsed || (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')) throw new Error('renderMail: the action URL must be an absolute http(s) URL');
}
