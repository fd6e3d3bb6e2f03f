"""DP empirical CDFs (Barczewski, Mawass, Ramon): tree mechanisms, smoothing, quantiles, ROC, calibration."""
