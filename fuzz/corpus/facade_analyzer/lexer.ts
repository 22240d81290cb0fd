// c
/* defineTool({ */ const r = /[}{]/g; x = a / b / c; const t = `${ `${'}'}` }`
harness.defineTool({ name: 'pdf.layout', parameters: { a: /}/, 'b': 1 } })