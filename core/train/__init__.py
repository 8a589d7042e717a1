"""Training stage: the shared training loop, MLM continued pretraining, BERT-CRF NER and its CRF helpers, run lineage."""
