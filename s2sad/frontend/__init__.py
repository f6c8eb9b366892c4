"""Frontend: source retrieval and name resolution, parsing, lowering to IR, analyses."""
