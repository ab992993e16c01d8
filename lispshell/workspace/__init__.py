"""The person's files: safe writes (files), the undo journal, what the model may write (writes),
projects and their trust, and the read-repair-write of a whole file (edit)."""
