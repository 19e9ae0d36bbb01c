"""sae: compute-to-storage offloading experiments from reservation to plot."""
