import { useEffect, useRef } from 'preact/hooks';
import type { EditorView } from 'codemirror';

/** CodeMirror is most of the console's weight: loaded (a chunk of its own) by the first page with an editor. */
const loadCodeMirror = () => Promise.all([import('codemirror'), import('@codemirror/lang-javascript'), import('@codemirror/state')]);

/**
 * A JavaScript editor with syntax highlighting (CodeMirror 6). CodeMirror writes its styles
 * into <style> elements, which the console's CSP refuses; inside a shadow root it adopts
 * constructed style sheets instead, which a CSP does not govern. So the editor lives in one.
 * `label` names it for assistive technology; `id` is for a <label for>.
 */
export function CodeEditor(props: { value: string; onChange?: (v: string) => void; label: string; id: string; readOnly?: boolean; invalid?: boolean }) {
  const host = useRef<HTMLDivElement>(null);
  const view = useRef<EditorView | null>(null);
  const onChange = useRef(props.onChange);
  onChange.current = props.onChange;
  const valueRef = useRef(props.value);
  valueRef.current = props.value;

  useEffect(() => {
    let v: EditorView | undefined;
    let gone = false;
    void loadCodeMirror().then(([{ basicSetup, EditorView }, { javascript }, { EditorState }]) => {
      if (gone) return;
      const el = host.current!;
      const root = el.shadowRoot ?? el.attachShadow({ mode: 'open' });
      v = new EditorView({
        root,
        parent: root,
        state: EditorState.create({
          // The value now, whatever changed while CodeMirror loaded.
          doc: valueRef.current,
          extensions: [
            basicSetup,
            javascript(),
            EditorView.lineWrapping,
            EditorState.readOnly.of(!!props.readOnly),
            EditorView.contentAttributes.of({ 'aria-label': props.label, id: props.id }),
            EditorView.updateListener.of((u) => {
              if (u.docChanged) onChange.current?.(u.state.doc.toString());
            }),
            EditorView.theme({
              '&': { fontSize: '13px', minHeight: '220px' },
              '.cm-scroller': { fontFamily: 'ui-monospace, SFMono-Regular, Menlo, Consolas, monospace', minHeight: '220px' },
              '&.cm-focused': { outline: '3px solid #7aa7f5' },
            }),
          ],
        }),
      });
      view.current = v;
    });
    return () => {
      gone = true;
      v?.destroy();
      view.current = null;
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, []);

  // A value changed from outside (loaded, reset) replaces the document.
  useEffect(() => {
    const v = view.current;
    if (v && v.state.doc.toString() !== props.value) v.dispatch({ changes: { from: 0, to: v.state.doc.length, insert: props.value } });
  }, [props.value]);

  return <div ref={host} class={props.invalid ? 'editor-host invalid' : 'editor-host'} data-testid={`editor-${props.id}`} />;
}

