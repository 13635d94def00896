import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';

/** The page's heading, with actions on its right. */
export function PageHeader(props: { title: string; children?: ComponentChildren; back?: { href: string; label: string } }) {
  return (
    <header class="page-header">
      {props.back && <a class="back" href={props.back.href}>← {props.back.label}</a>}
      <div class="page-title">
        <h1>{props.title}</h1>
        <div class="actions">{props.children}</div>
      </div>
    </header>
  );
}

/** What a list shows when it has nothing: what this is and what to do first. */
export function EmptyState(props: { title: string; children?: ComponentChildren }) {
  return (
    <div class="empty">
      <p class="empty-title">{props.title}</p>
      {props.children && <div>{props.children}</div>}
    </div>
  );
}

export function Loading() {
  return <p class="loading" aria-live="polite">Loading…</p>;
}

/**
 * The Clipboard API exists only in a secure context (https, or localhost); Coffer served over
 * plain http elsewhere falls back to copying a selected, off-screen textarea.
 */
async function copyText(value: string): Promise<boolean> {
  try {
    if (navigator.clipboard) {
      await navigator.clipboard.writeText(value);
      return true;
    }
  } catch {
    // Refused (no permission): try the fallback.
  }
  const area = document.createElement('textarea');
  area.value = value;
  area.setAttribute('readonly', '');
  area.className = 'sr-only';
  document.body.appendChild(area);
  area.select();
  try {
    return document.execCommand('copy');
  } finally {
    area.remove();
  }
}

/** Copies `value` to the clipboard; says so for a moment. */
export function CopyButton(props: { value: string; label?: string }) {
  const [done, setDone] = useState(false);
  return (
    <button type="button" class="secondary" onClick={async () => {
      if (await copyText(props.value)) {
        setDone(true);
        setTimeout(() => setDone(false), 1500);
      }
    }}>{done ? 'Copied' : props.label ?? 'Copy'}</button>
  );
}

export function Json(props: { value: unknown }) {
  return <pre class="json">{JSON.stringify(props.value, null, 2)}</pre>;
}

export function When(props: { at?: string | null }) {
  if (!props.at) return <span class="muted">—</span>;
  const d = new Date(props.at);
  return <time dateTime={props.at} title={props.at}>{d.toLocaleString()}</time>;
}

/** Key–value rows of a detail page. */
export function Facts(props: { rows: [string, ComponentChildren][] }) {
  return (
    <dl class="facts">
      {props.rows.map(([k, v]) => [<dt key={`${k}-t`}>{k}</dt>, <dd key={`${k}-d`}>{v ?? <span class="muted">—</span>}</dd>])}
    </dl>
  );
}

/** Asks before a destructive action; the action runs only on "yes". */
export function confirmed(question: string): boolean {
  return window.confirm(question);
}

export function Badge(props: { children: ComponentChildren; tone?: 'ok' | 'warn' | 'bad' | 'info' }) {
  return <span class={`badge ${props.tone ?? ''}`}>{props.children}</span>;
}
