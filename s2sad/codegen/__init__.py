"""Code generation: the reverse (and forward) emitters, source rendering with source maps, loading."""
