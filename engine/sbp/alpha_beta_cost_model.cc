// placeholder: implemented by the session building alpha_beta_cost_model
