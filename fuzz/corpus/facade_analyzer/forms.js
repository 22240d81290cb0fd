ctx.tools.register(defineTool({ name: 'pdf_extract', description: 'a' + "b", parameters: { path: { type: 'string' } } }))
register({ name: `t_${x}`, parameters: {} })
capabilities?.register({ id: 'doc', operations: [{ name: 'read' }] })