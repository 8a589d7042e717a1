"""Language-model stage: n-gram LMs, DSIR features, sentence embeddings, model resolution, Ray passes, similarity measures."""
