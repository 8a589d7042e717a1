"""Job runner: background job processes, the typed job kinds, how jobs read to a person, progress reporting."""
