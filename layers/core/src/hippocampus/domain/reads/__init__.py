"""Reads and edits: the memory body, its history, jobs, the lists, the export, and edits by hand."""
