"""Selection stage: choosing SC from the DC (every strategy), the 2-D projection and the Map page's helpers."""
