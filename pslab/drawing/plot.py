"""Every plot of pslab in one namespace: timelines (000, 001), training curves and staleness
(000), the data-flow diagram (002) and its ZeRO ring (notebook 07), figure 003's tiers, hierarchy
and comparisons, and notebook 05's classic results.

The `*Plot` classes update in place (for the notebook widgets); the functions draw once and
return a matplotlib Figure (no pyplot: nothing global, nothing to close, same file every time).
"""
from .classic_plot import plot_result
from .dataflow_plot import Flow, flows, plot_dataflow
from .nas_compare import plot_rewards, plot_sweep
from .nas_diagram import plot_figure, plot_hierarchy
from .nas_tiers_plot import plot_tiers
from .timeline_plot import TimelinePlot, compare, legend_handles, plot_timeline
from .training_plot import StalenessPlot, TrainingPlot, plot_staleness, plot_training
from .zero_flow import RingFlow, plot_zero_flow, ring_flows
from .zero_plot import memory_bars, stacked

__all__ = ["TimelinePlot", "TrainingPlot", "StalenessPlot", "plot_timeline", "compare",
           "plot_training", "plot_staleness", "plot_dataflow", "flows", "Flow", "legend_handles",
           "stacked", "memory_bars", "plot_zero_flow", "ring_flows", "RingFlow", "plot_figure", "plot_hierarchy", "plot_tiers",
           "plot_rewards", "plot_sweep", "plot_result"]
