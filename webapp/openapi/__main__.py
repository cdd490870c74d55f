"""``python -m webapp.openapi``: rewrite participant.json from the field declarations."""
from webapp.openapi import SCHEMA_FILE, schema_text

SCHEMA_FILE.write_text(schema_text())
print(f"wrote {SCHEMA_FILE}")
