"""The drawing layer: timelines, training curves, data-flow diagrams, TikZ, Chrome traces and
the palette they share. It reads runs and never reaches back into the clock or the actors."""
