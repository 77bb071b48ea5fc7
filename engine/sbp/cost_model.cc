// placeholder: implemented by the session building cost_model
