"""Where results go: the events segmenter and reports, overlays, the annotated and mask videos,
per-event clips and mask images, each written by a sink."""
