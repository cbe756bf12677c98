"""The notebook layer: dashboards (widgets, live views, their settings), the predict-then-run
quiz and sweeps with a progress bar. It calls the library and draws with the drawing layer."""
