//! Stage "report": pure renderers (table, markdown, JUnit, JSON, SVG, annotations).
